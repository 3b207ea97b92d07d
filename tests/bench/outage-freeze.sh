#!/bin/bash
# Benchmark (not a suite stage): diagnose's outage dating on the real binary. One rank's
# process is frozen (SIGSTOP, then SIGCONT) inside an all-pairs bandwidth pass on local
# ranks: every message of its pair waits until it runs again, as over a port that is
# down, and the other pairs wait for that pair at the round's end. The freeze's times are
# taken from this machine's UTC clock; diagnose's window comes from the samples' own
# timestamps (run clock + the file's epoch_offset_ns). Prints both.
#
#   tests/bench/outage-freeze.sh OUT.h5 DELAY_S "DOWN [UP DOWN ...]" [BIN]
#   e.g. tests/bench/outage-freeze.sh /tmp/f.h5 8 "1"              (one 1 s freeze)
#        tests/bench/outage-freeze.sh /tmp/f.h5 8 "0.4 0.6 0.4"    (a flap)
set -u
out=$1; delay=$2; pattern=$3; bin=${4:-build/fabscope}
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nice mpirun --allow-run-as-root --oversubscribe -np 4 "$bin" run --scenario "$here/outage-freeze.yaml" \
  --output "$out" --overwrite --no-progress > "$out.log" 2>&1 &
launcher=$!
sleep "$delay"
victim=$(pgrep -P "$launcher" | sed -n 3p)   # the third rank's process, a child of this mpirun
[ -n "$victim" ] || { echo "outage-freeze: no rank process under mpirun $launcher" >&2; exit 2; }
set -- $pattern
while [ $# -gt 0 ]; do
  down=$1; up=${2:-0}; shift; [ $# -gt 0 ] && shift
  echo "freeze $(date -u +%H:%M:%S.%N)"; kill -STOP "$victim"; sleep "$down"
  kill -CONT "$victim"; echo "thaw $(date -u +%H:%M:%S.%N)"; sleep "$up"
done
wait "$launcher" || { echo "outage-freeze: the run failed, see $out.log" >&2; exit 1; }
PYTHONPATH="$here/../../analysis" /usr/bin/python3 - "$out" <<'PY'
import sys
import pandas as pd
from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.diagnosis import outages
from fabscope_analysis.reader import open_result
with open_result(sys.argv[1]) as r:
    d = diagnose(r)
    _, _, zero = outages.stalls_of(r)
    epoch = int(r.attrs["epoch_offset_ns"])
    found = [c for c in d.culprits if c.window_s]
    for c in found:
        a, b = (pd.Timestamp(zero + int(t * 1e9) + epoch, unit="ns") for t in c.window_s)
        print(f"found {a.strftime('%H:%M:%S.%f')} to {b.strftime('%H:%M:%S.%f')}: {c.subject()}, "
              f"{c.symptoms[0].split(', longest')[0].split('), ')[-1]}")
    if not found:
        print("found no outage: " + d.first_line())
PY
