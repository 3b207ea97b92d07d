# kind: reference with ucx_perftest on 2 local ranks: tag_lat
# and tag_bw over shared memory (the test's `tls: shm,self`) and over TCP on the
# loopback (UCX_TLS inherited from the environment), each next to a fabscope
# test of the same size over ucx. The file records the command, the version
# (ucx_info -v) and figures > 0; summary prints both figures and their ratio;
# accept bounds the ratio. Then a tool that is not there (a `program` that does
# not exist, and a PATH without ucx_perftest or OSU) is `skipped`, with the reason.
# Part osu: OSU's osu_latency and osu_bw, each launched by fabscope's group rank 0
# with its own mpirun on the pair's host, next to fabscope's latency and
# bandwidth over MPI; needs them built (FABSCOPE_OSU_DIR, or on PATH;
# tests/support/build-osu.sh builds them from an OSU source tree), else SKIP.
# ctest-parts: shm tcp missing osu
source "$(dirname "$0")/lib.bash"
needs_ucx_perftest() {
  command -v ucx_perftest > /dev/null || { echo "SKIP: ucx_perftest not installed (Debian's ucx-utils)"; exit 77; }
  version=$(ucx_info -v | sed -n 's/^# Version //p')
}
analysis() { (cd "$FABSCOPE_SOURCE_DIR/analysis" && /usr/bin/python3 -m fabscope_analysis "$@"); }

scenario() {  # FILE TLS-LINE
  cat > "$1" <<YAML
name: reference-check
defaults: {timeout: 60s}
tests:
  - {name: lat, kind: latency, transport: ucx, sizes: [8], iterations: 2000, warmup: 100}
  - {name: bw, kind: bandwidth, transport: ucx, sizes: [1MiB], iterations: 100, warmup: 10}
  - {name: ref-lat, kind: reference, test: tag_lat, sizes: [8], iterations: 2000, warmup: 100$2}
  - {name: ref-bw, kind: reference, test: tag_bw, sizes: [1MiB], iterations: 100, warmup: 10$2}
YAML
}

check_file() {  # FILE EXPECTED-TLS EXPECTED-COMMAND-PREFIX
  /usr/bin/python3 - "$@" "$version" <<'PY'
import sys, math, h5py
path, tls, prefix, version = sys.argv[1:5]
with h5py.File(path, "r") as f:
    assert f.attrs["complete"] == 1 and f.attrs["exit_code"] == 0, f.attrs["exit_code"]
    refs = [g for g in f["tests"].values() if g.attrs["kind"] == "reference"]
    assert len(refs) == 2, len(refs)
    for g in refs:
        a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in g.attrs.items()}
        assert a["status"] == "passed", (a["status"], a["error"])
        assert a["reference_tool"] == "ucx_perftest" and a["reference_tls"] == tls, a["reference_tls"]
        assert a["reference_version"] == version, (a["reference_version"], version)
        cmd = a["reference_command"]
        assert cmd.startswith(prefix) and f" 127.0.0.1 -p " in cmd and f"-t {a['reference_test']}" in cmd \
            and f"-s {a['bytes']} " in cmd, cmd
        assert a["reference_server_command"].endswith("-p " + cmd.split(" -p ")[1].split()[0]), a["reference_server_command"]
        assert a["reference_exit_status"] == 0 and "Final:" in a["reference_output"]
        assert a["reference_iterations"] == a["iterations"], (a["reference_iterations"], a["iterations"])
        assert a["reference_median_us"] > 0 and a["reference_average_us"] > 0, a
        assert a["reference_bandwidth_mibps"] > 0 and a["reference_gbps"] > 0, a
        want = "latency" if a["reference_test"] == "tag_lat" else "overhead"
        assert a["reference_time_meaning"] == want and a["metric"] == ("latency" if want == "latency" else "bandwidth")
        print(f"{a['reference_test']}: median {a['reference_median_us']} us, {a['reference_gbps']:.3f} GB/s: {cmd}")
PY
}

check_summary() {  # FILE
  local out
  out=$(analysis summary "$1")
  grep -q "^reference tools side by side (ratio = fabscope / reference):" <<<"$out" \
    || { echo "FAIL: no side-by-side section"; echo "$out"; exit 1; }
  grep -Eq "^  8 B p50 latency: fabscope [0-9.]+ us \(test 0000\) vs ucx_perftest $version tag_lat .* [0-9.]+ us \(test 0002\): ratio fabscope/reference [0-9.]+" <<<"$out" \
    || { echo "FAIL: no latency line side by side"; echo "$out"; exit 1; }
  grep -Eq "^  1 MiB mean bandwidth: fabscope [0-9.]+ GB/s \(test 0001\) vs ucx_perftest .* tag_bw .*: ratio fabscope/reference [0-9.]+" <<<"$out" \
    || { echo "FAIL: no bandwidth line side by side"; echo "$out"; exit 1; }
  grep -E "^  (8 B|1 MiB) " <<<"$out"
  # accept: a loose factor passes, factor 1 (exact agreement) fails naming the pair.
  printf 'fabscope_criteria: 1\nallow_validity: true\nrules:\n  - name: agrees\n    match: {kind: [latency, bandwidth]}\n    reference_ratio_max: 1000\n' > "$scratch/loose.yaml"
  printf 'fabscope_criteria: 1\nallow_validity: true\nrules:\n  - name: agrees\n    match: {kind: latency}\n    reference_ratio_max: 1\n' > "$scratch/strict.yaml"
  analysis accept "$1" --criteria "$scratch/loose.yaml" > "$scratch/loose.out" \
    || { echo "FAIL: accept with reference_ratio_max 1000"; cat "$scratch/loose.out"; exit 1; }
  if analysis accept "$1" --criteria "$scratch/strict.yaml" > "$scratch/strict.out"; then
    echo "FAIL: accept with reference_ratio_max 1 passed"; cat "$scratch/strict.out"; exit 1
  fi
  grep -q "reference_ratio_max: 8 B p50 latency: fabscope" "$scratch/strict.out" \
    || { echo "FAIL: the failed ratio check does not name the pair"; cat "$scratch/strict.out"; exit 1; }
}

if part_wanted shm; then
  needs_ucx_perftest
  scenario "$scratch/shm.yaml" ", tls: 'shm,self'"
  run_mpi -np 2 -x UCX_TLS=sm,self "$FABSCOPE_BIN" run --scenario "$scratch/shm.yaml" --output "$scratch/shm.h5" \
    --no-progress > "$scratch/shm.out" 2>&1 || { cat "$scratch/shm.out"
    cannot_tell_if_busy "the shm run meets its deadlines" "$scratch/shm.h5"; echo "FAIL: the shm run failed"; exit 1; }
  check_file "$scratch/shm.h5" "shm,self" "UCX_TLS=shm,self /"
  check_summary "$scratch/shm.h5"
fi

if part_wanted tcp; then
  needs_ucx_perftest
  scenario "$scratch/tcp.yaml" ""
  run_mpi -np 2 -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo "$FABSCOPE_BIN" run --scenario "$scratch/tcp.yaml" \
    --output "$scratch/tcp.h5" --no-progress > "$scratch/tcp.out" 2>&1 \
    || { cat "$scratch/tcp.out"; cannot_tell_if_busy "the tcp run meets its deadlines" "$scratch/tcp.h5"
         echo "FAIL: the tcp run failed"; exit 1; }
  check_file "$scratch/tcp.h5" "" "/"
  check_summary "$scratch/tcp.h5"
fi

if part_wanted missing; then
  echo "tests: [{name: ref, kind: reference, sizes: [8], iterations: 100}]" > "$scratch/missing.yaml"
  sed -i '1i name: reference-missing' "$scratch/missing.yaml"
  missing_run() {  # OUTPUT WHY-PATTERN MPIRUN-ARGS... -- FABSCOPE-ARGS...
    local h5=$1 why=$2
    shift 2
    local mpi=()
    while [[ $1 != -- ]]; do mpi+=("$1"); shift; done
    shift
    run_mpi -np 2 "${mpi[@]}" "$FABSCOPE_BIN" run --scenario "$scratch/missing.yaml" --output "$h5" --no-progress "$@" \
      > "$h5.out" 2>&1 || { echo "FAIL: a missing tool made the run fail"; cat "$h5.out"; exit 1; }
    /usr/bin/python3 - "$h5" "$why" <<'PY'
import re, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    a = f["tests/0000"].attrs
    text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
    status, error = text(a["status"]), text(a["error"])
    assert f.attrs["exit_code"] == 0, f.attrs["exit_code"]
    assert status == "skipped", (status, error)
    assert re.search(sys.argv[2], error), error
    print("skipped:", error)
PY
  }
  missing_run "$scratch/gone.h5" "ucx_perftest is not installed: rank 0 \(.*\): /nonexistent/ucx_perftest is not an executable file; rank 1" \
    -- --set ref.program=/nonexistent/ucx_perftest
  mkdir -p "$scratch/empty-bin"
  missing_run "$scratch/nopath.h5" "rank 0 \(.*\): ucx_perftest not found on PATH \(ucx_perftest comes with UCX: Debian's ucx-utils\)" \
    -x PATH="$scratch/empty-bin" --
  analysis summary "$scratch/nopath.h5" | grep -q "skipped" || { echo "FAIL: summary does not show skipped"; exit 1; }
  # The shipped criteria list the skipped instance and do not fail the run for it (with the
  # busy-machine findings of a loaded CI box allowed: they are not what this checks).
  { cat "$FABSCOPE_SOURCE_DIR/analysis/criteria/local.yaml"; echo "allow_validity: true"; } > "$scratch/local.yaml"
  analysis accept "$scratch/nopath.h5" --criteria "$scratch/local.yaml" > "$scratch/nopath.accept" \
    || { echo "FAIL: accept failed a run whose only reference tool is missing"; cat "$scratch/nopath.accept"; exit 1; }
  grep -q "^SKIP  status: " "$scratch/nopath.accept" && grep -q "1 test instance skipped" "$scratch/nopath.accept" \
    || { echo "FAIL: accept does not list the skipped instance"; cat "$scratch/nopath.accept"; exit 1; }
  # perftest (no RDMA device here, and not installed): skipped by its name.
  printf 'name: perftest-missing\ntests: [{name: ref, kind: reference, tool: ib_write_bw, sizes: [64KiB], iterations: 100}]\n' \
    > "$scratch/missing.yaml"
  missing_run "$scratch/noperftest.h5" "ib_write_bw is not installed: rank 0 \(.*\): ib_write_bw not found on PATH \(ib_write_bw comes with perftest: Debian's perftest" \
    -x PATH="$scratch/empty-bin" --
  printf 'name: osu-missing\ntests: [{name: ref, kind: reference, tool: osu_latency, sizes: [8], iterations: 100}]\n' \
    > "$scratch/missing.yaml"
  # OSU not installed (nor its launcher on that PATH): skipped, naming both.
  missing_run "$scratch/noosu.h5" "osu_latency is not installed: rank 0 \(.*\): osu_latency not found on PATH \(osu_latency comes with the OSU micro-benchmarks.*the launcher mpirun not found on PATH" \
    -x PATH="$scratch/empty-bin" --
fi

if part_wanted osu; then
  osu_dir=${FABSCOPE_OSU_DIR:-}
  if [[ -z $osu_dir ]] && command -v osu_latency > /dev/null; then osu_dir=$(dirname "$(command -v osu_latency)"); fi
  [[ -n $osu_dir && -x $osu_dir/osu_latency && -x $osu_dir/osu_bw ]] || {
    echo "SKIP: OSU's osu_latency and osu_bw are not built (FABSCOPE_OSU_DIR, or on PATH; tests/support/build-osu.sh)"
    exit 77
  }
  cat > "$scratch/osu.yaml" <<YAML
name: reference-osu
defaults: {timeout: 60s}
tests:
  - {name: lat, kind: latency, transport: mpi, sizes: [8], iterations: 2000, warmup: 100}
  - {name: bw, kind: bandwidth, transport: mpi, sizes: [1MiB], iterations: 100, warmup: 10}
  - {name: ref-lat, kind: reference, tool: osu_latency, sizes: [8], iterations: 2000, warmup: 100}
  - {name: ref-bw, kind: reference, tool: osu_bw, sizes: [1MiB], iterations: 100, warmup: 10}
YAML
  run_mpi -np 2 -x PATH="$osu_dir:$PATH" "$FABSCOPE_BIN" run --scenario "$scratch/osu.yaml" --output "$scratch/osu.h5" \
    --no-progress > "$scratch/osu.out" 2>&1 || { echo "FAIL: the OSU run failed"; cat "$scratch/osu.out"; exit 1; }
  /usr/bin/python3 - "$scratch/osu.h5" "$osu_dir" <<'PY'
import sys, math, h5py
path, osu_dir = sys.argv[1:3]
with h5py.File(path, "r") as f:
    assert f.attrs["complete"] == 1 and f.attrs["exit_code"] == 0, f.attrs["exit_code"]
    refs = [g for g in f["tests"].values() if g.attrs["kind"] == "reference"]
    assert len(refs) == 2, len(refs)
    for g in refs:
        a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in g.attrs.items()}
        tool = a["reference_tool"]
        assert a["status"] == "passed", (a["status"], a["error"])
        cmd = a["reference_command"]
        size = a["bytes"]
        want = f" -np 2 --host "
        assert cmd.split()[0].endswith("mpirun") and want in cmd and \
            cmd.endswith(f"{osu_dir}/{tool} -m {size}:{size} -i {a['iterations']} -x {a['warmup']}"), cmd
        assert a["reference_exit_status"] == 0 and "# OSU MPI" in a["reference_output"], a["reference_output"]
        assert a["reference_version"] and a["reference_version"][0].isdigit(), a["reference_version"]
        assert a["reference_iterations"] == a["iterations"]
        if tool == "osu_latency":
            assert a["metric"] == "latency" and a["reference_average_us"] > 0, a
            assert math.isnan(a["reference_gbps"])
        else:
            assert a["metric"] == "bandwidth" and a["reference_gbps"] > 0, a
        print(f"{tool} {a['reference_version']}: avg {a['reference_average_us']} us, {a['reference_gbps']} GB/s: {cmd}")
PY
  out=$(analysis summary "$scratch/osu.h5")
  grep -Eq "^  8 B mean latency: fabscope [0-9.]+ us \(test 0000\) vs osu_latency [0-9.]+ [0-9.]+ us \(test 0002\): ratio fabscope/reference [0-9.]+" <<<"$out" \
    || { echo "FAIL: no OSU latency line side by side"; echo "$out"; exit 1; }
  grep -Eq "^  1 MiB mean bandwidth: fabscope [0-9.]+ GB/s \(test 0001\) vs osu_bw [0-9.]+ [0-9.]+ GB/s \(test 0003\): ratio" <<<"$out" \
    || { echo "FAIL: no OSU bandwidth line side by side"; echo "$out"; exit 1; }
  grep -E "^  (8 B|1 MiB) " <<<"$out"
fi
echo "reference: OK"
