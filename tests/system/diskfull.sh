#!/usr/bin/env bash
# A full disk mid-run: the result file lives on a 2 MiB tmpfs that the samples
# of the third or fourth instance no longer fit in. Expected, in both HDF5
# modes: exit 3 with a message naming the failed HDF5 write, no crash (no
# signal, no sanitizer report), and the instances written before still intact
# in a file marked complete=0.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"

require_root "mounts a small tmpfs"
require_fabscope
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

scratch=$(mktemp -d /tmp/fabscope-diskfull.XXXXXX)
on_exit "rm -rf '$scratch'"
small_disk "$scratch" 2m fabscope-diskfull

# 2 measuring ranks x 5000 samples x 40 bytes = 400 kB of samples per instance.
cat > "$scratch/big.yaml" <<'YAML'
name: diskfull
seed: 3
defaults: {iterations: 5000, warmup: 10, timeout: 60s}
tests:
  - name: lat
    kind: latency
    sizes: [8, 16, 32, 64, 128, 256]
YAML

for mode in parallel serial; do
  out="$scratch/disk/$mode.h5"
  rc=0
  timeout --kill-after=10 240 mpirun -np 4 "$FABSCOPE_BIN" run --scenario "$scratch/big.yaml" --output "$out" \
    --set hdf5=$mode --no-progress > "$scratch/$mode.log" 2>&1 || rc=$?
  note "$mode: exit $rc; $(df -h --output=used,size "$scratch/disk" | tail -1)"
  [[ $rc -eq 3 ]] || { cat "$scratch/$mode.log"; fail "$mode: exit $rc, expected 3 (runtime failure)"; }
  if grep -Eq 'AddressSanitizer|runtime error:|Segmentation fault|signal [0-9]+|core dumped' "$scratch/$mode.log"; then
    cat "$scratch/$mode.log"; fail "$mode: the failure was a crash, not a clean error"
  fi
  grep -q 'HDF5: .*failed' "$scratch/$mode.log" || { cat "$scratch/$mode.log"; fail "$mode: no message naming the failed HDF5 call"; }
  grep -q 'marked complete=0' "$scratch/$mode.log" || { cat "$scratch/$mode.log"; fail "$mode: no word that the file is kept incomplete"; }
  /usr/bin/python3 - "$out" "$mode" <<'PY' || fail "$mode: the file left behind is not intact"
import sys, h5py, numpy as np
path, mode = sys.argv[1], sys.argv[2]
with h5py.File(path, "r") as f:
    assert int(f.attrs["complete"]) == 0, f"complete={f.attrs['complete']}"
    intact = 0
    for name, g in sorted(f["tests"].items()):
        status = g.attrs.get("status", b"")
        status = status.decode() if isinstance(status, bytes) else str(status)
        if status != "passed" or "samples" not in g:
            continue
        s = g["samples"][()]
        ranks, counts = np.unique(s["rank"], return_counts=True)
        assert len(ranks) == 2 and all(c == 5000 for c in counts), f"/tests/{name}: {dict(zip(ranks, counts))}"
        assert np.all(s["t_done_ns"] > s["t_post_ns"]), f"/tests/{name}: damaged rows"
        intact += 1
    assert intact >= 1, "no finished instance survived"
    assert intact < 6, "every instance fit: the disk was not filled"
    print(f"diskfull ({mode}): {intact} finished instances intact, complete=0")
PY
  rm -f "$out"
done
note "ok"
