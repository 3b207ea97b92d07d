#!/usr/bin/env bash
# The real fabscope binary on a simulated fabric: builds fabscope for SimGrid SMPI
# (cmake -DFABSCOPE_SMPI=ON with smpicc/smpicxx), writes a leaf-spine platform with one
# planted fault (smpi_platform.py), runs the all-pairs scenario (smpi-allpairs.yaml)
# under smpirun at HOSTS x GPUS simulated ranks, then `diagnose` on the file, and says
# whether the planted component is named and what else is (docs/scale.md, "The real
# binary on a simulated fabric").
#
# usage: tests/bench/smpi_allpairs.sh [--hosts 32] [--gpus 8] [--hosts-per-leaf 8]
#          [--spines 4] [--fault rx-slow:0.25@node13] [--out DIR] [--build DIR]
#          [--scenario FILE] [--timeout SECONDS]
# Needs: simgrid (smpicc, smpicxx, smpirun: Debian libsimgrid-dev), serial HDF5 headers
# (Debian libhdf5-dev; or SMPI_HDF5_ROOT=a tree holding include/hdf5/serial), and the
# libraries of the ordinary build (Boost.Program_options, yaml-cpp).
# Exit: 0 the fault is named and nothing else; 1 it is not, or a false culprit; 2 usage
# or a step failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
hosts=32 gpus=8 per_leaf=8 spines=4 fault=rx-slow:0.25@node13
out=${TMPDIR:-/tmp}/fabscope-smpi-allpairs build=$root/build-smpi scenario=$here/smpi-allpairs.yaml timeout=3000
while (($#)); do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --hosts-per-leaf) per_leaf=$2; shift 2 ;;
    --spines) spines=$2; shift 2 ;;
    --fault) fault=$2; shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --build) build=$(realpath -m "$2"); shift 2 ;;
    --scenario) scenario=$(realpath "$2"); shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    *) sed -n '/^# usage/,/^# Exit/p' "$0" >&2; exit 2 ;;
  esac
done
for tool in smpicc smpicxx smpirun; do
  command -v "$tool" >/dev/null || { echo "smpi_allpairs: $tool not found (Debian: apt-get install libsimgrid-dev)" >&2; exit 2; }
done
python=/usr/bin/python3
mkdir -p "$out"

# Serial HDF5: the system's, SMPI_HDF5_ROOT's, or the Debian package unpacked into the
# build tree (its runtime library, libhdf5-103-1, comes with python3-h5py).
hdf5_args=()
if [[ -n ${SMPI_HDF5_ROOT:-} ]]; then
  hdf5_args=(-DCMAKE_PREFIX_PATH="$SMPI_HDF5_ROOT" -DFABSCOPE_SMPI_HDF5_INCLUDE_DIR="$SMPI_HDF5_ROOT/include/hdf5/serial")
elif [[ ! -f /usr/include/hdf5/serial/hdf5.h ]]; then
  unpacked=$build/serial-hdf5
  if [[ ! -f $unpacked/usr/include/hdf5/serial/hdf5.h ]]; then
    echo "smpi_allpairs: no serial HDF5 headers; unpacking Debian's libhdf5-dev into $unpacked" >&2
    mkdir -p "$unpacked"
    (cd "$unpacked" && apt-get download libhdf5-dev >/dev/null && dpkg -x libhdf5-dev_*.deb .) ||
      { echo "smpi_allpairs: could not fetch libhdf5-dev (install it, or set SMPI_HDF5_ROOT)" >&2; exit 2; }
  fi
  hdf5_args=(-DCMAKE_PREFIX_PATH="$unpacked/usr" -DFABSCOPE_SMPI_HDF5_INCLUDE_DIR="$unpacked/usr/include/hdf5/serial")
fi

if [[ ! -f $build/CMakeCache.txt ]]; then
  CC=smpicc CXX=smpicxx nice cmake -S "$root" -B "$build" -DFABSCOPE_SMPI=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_UNITY_BUILD=ON "${hdf5_args[@]}" >"$out/configure.log" 2>&1 ||
    { tail -20 "$out/configure.log" >&2; exit 2; }
fi
nice cmake --build "$build" -j2 --target fabscope >"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; exit 2; }

$python "$here/smpi_platform.py" "$out" --hosts "$hosts" --gpus "$gpus" --hosts-per-leaf "$per_leaf" \
  --spines "$spines" --fault "$fault"
ranks=$((hosts * gpus))
echo "smpi_allpairs: $ranks simulated ranks ($hosts hosts x $gpus), fault $fault; running (log: $out/run.log)"
# network/model CM02: max-min sharing with no TCP correction factors (an RDMA fabric,
# as in validation/); network/crosstraffic 0: no TCP acknowledgement flow charged to the
# reverse path (with it, a node whose receive port was slowed sent at 58 % too: its
# flows' reverse parts share that saturated port, and max-min gives them its rate). smpi/host-speed 50Mf against the platform's 1Gf: the CPU time the
# code between MPI calls took here is injected as 1/20 of it (at 1:1 fabscope's own work
# on a 1 MiB message, ~30 us here, hid the network). smpi/test and smpi/iprobe: the
# simulated time a failed MPI_Test or an MPI_Iprobe costs (control-plane polling; the
# data plane waits in MPI_Wait), 0.1 us each and not growing (grow-injected-times: by
# default SimGrid multiplies them by a count of failed calls that all ranks share, so a
# rank noticed its barrier's release up to milliseconds late, and the Iprobe of the loss
# channel cost 100 us). smpi/coll-selector mpich: SimGrid's blocking collectives with
# logarithmic algorithms, which the build's MPI_Iallreduce and MPI_Iallgather run
# (cmake/smpi/fabscope_smpi_compat.h: SimGrid's linear ones stalled 256 ranks).
smpi_options=(--cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=smpi/host-speed:50Mf --cfg=smpi/test:1e-7 --cfg=smpi/iprobe:1e-7
  --cfg=smpi/grow-injected-times:no --cfg=smpi/coll-selector:mpich --cfg=smpi/display-timing:yes)
start=$(date +%s)
set +e
(cd "$out" && timeout "$timeout" nice -n 10 smpirun -platform platform.xml -hostfile hostfile -np "$ranks" \
  "${smpi_options[@]}" --log=root.thres:warning --log=smpi_utils.thres:info \
  "$build/fabscope" run --scenario "$scenario" --output "$out/out.h5" --overwrite --no-progress \
  --topology "$out/topology.yaml") >"$out/run.log" 2>&1
rc=$?
set -e
echo "smpi_allpairs: smpirun exit $rc after $(($(date +%s) - start)) s of wall time"
grep -E "Simulated time|simulation took" "$out/run.log" || true
if ((rc != 0)); then tail -30 "$out/run.log" >&2; exit 2; fi

set +e
PYTHONPATH=$root/analysis $python -m fabscope_analysis diagnose "$out/out.h5" --json "$out/diagnose.json" \
  >"$out/diagnose.txt" 2>&1
set -e
cat "$out/diagnose.txt"
[[ -f $out/diagnose.json ]] || { echo "smpi_allpairs: diagnose wrote no JSON" >&2; exit 2; }
$python - "$out/truth.json" "$out/diagnose.json" <<'EOF'
import json, sys
truth = json.load(open(sys.argv[1]))
diagnosis = json.load(open(sys.argv[2]))
fault = truth["fault"]
# A culprit names a host (its NIC or host side, with the ranks seen) or a link between leaves.
named, others = False, []
for c in diagnosis.get("culprits", []):
    subject = c.get("subject") or c.get("host") or "?"
    what = f"{subject} {c.get('component', '')} {c.get('direction', '')} (ranks {c.get('ranks')})".strip()
    hit = False
    if fault and fault["kind"] in ("rx-slow", "tx-slow", "port-slow"):
        side = {"rx-slow": "receive", "tx-slow": "send"}.get(fault["kind"])
        on_target = c.get("host") == fault["target"]
        hit = on_target and (side is None or c.get("direction") in (side, "both", "", None))
        if hit and side and c.get("direction") == "both":
            # The planted side is named; the other side of the same port is a false finding.
            other = {"receive": "send", "send": "receive"}[side]
            others.append(f"{subject} {other} side (named with the planted {side} side)")
    elif fault and fault["kind"] == "uplink-slow":
        hit = fault["target"].split(".")[0] in json.dumps(c)
    if hit:
        named = True
    else:
        others.append(what)
planted = f"{fault['kind']} {fault['factor']} at {fault['target']}" if fault else "nothing"
print(f"smpi_allpairs: verdict {diagnosis.get('verdict')}; planted {planted}; "
      f"named: {'yes' if named or not fault else 'NO'}; false culprits: {'; '.join(others) or 'none'}")
sys.exit(0 if (named or not fault) and not others else 1)
EOF
