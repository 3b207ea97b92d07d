"""tests/gpu/compare_pipelined.py, which the 2-GPU run uses to hold fabscope's pipelined
all-reduce figure against nccl-tests: it reads nccl-tests' out-of-place busbw column
(not the in-place one, not the header) and judges the 3 % target from 16 MiB up."""
import importlib.util
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("compare_pipelined", ROOT / "tests/gpu/compare_pipelined.py")
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)

# as all_reduce_perf 2.19 prints it (writeResultHeader, default columns)
NCCL_TESTS = """#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
     8388608       2097152     float     sum      -1    60.00  139.81  139.81       0    59.00  142.18  142.18       0
    16777216       4194304     float     sum      -1    90.10  186.21  186.21       0    89.00  188.51  188.51       0
    33554432       8388608     float     sum      -1   150.00  223.70  223.70       0   149.00  225.20  225.20       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 205.9
"""


def write(path, rows):
    with h5py.File(path, "w") as f:
        tests = f.create_group("tests")
        for i, (size, pipelined, per_call) in enumerate(rows):
            a = tests.create_group(f"{i:04d}").attrs
            a["kind"], a["status"], a["bytes"] = "allreduce", "passed", np.int64(size)
            a["pipelined_busbw_gbps"], a["busbw_gbps"] = pipelined, per_call


def test_reads_the_out_of_place_busbw_and_judges_from_16_mib(tmp_path, capsys):
    ref = tmp_path / "ar.txt"
    ref.write_text(NCCL_TESTS)
    assert compare.nccl_tests_busbw(ref) == {8388608: 139.81, 16777216: 186.21, 33554432: 223.70}
    # 8 MiB far off (not judged), 16 and 32 MiB within 3 %
    write(tmp_path / "ok.h5", [(8 << 20, 100.0, 90.0), (16 << 20, 181.0, 170.0), (32 << 20, 229.0, 200.0)])
    assert compare.main([str(tmp_path / "ok.h5"), str(ref), str(ref)]) == 0
    out = capsys.readouterr().out
    assert "| 16 MiB | 186.2 GB/s | 181.0 GB/s | 0.972 |" in out and "within 3 %: met" in out, out
    assert "| 8 MiB | 139.8 GB/s | 100.0 GB/s | 0.715 | 139.8 GB/s | 90.0 GB/s | 0.644 | - |" in out, out
    # 32 MiB 4 % low: missed
    write(tmp_path / "low.h5", [(16 << 20, 186.0, 170.0), (32 << 20, 214.7, 200.0)])
    assert compare.main([str(tmp_path / "low.h5"), str(ref)]) == 1
    assert "| 32 MiB | 223.7 GB/s | 214.7 GB/s | 0.960 | - | 200.0 GB/s | - | within 3 %: NOT met |" \
        in capsys.readouterr().out


def test_unreadable_input_exits_2(tmp_path):
    (tmp_path / "empty.txt").write_text("# nothing measured\n")
    write(tmp_path / "f.h5", [(16 << 20, 1.0, 1.0)])
    assert compare.main([str(tmp_path / "f.h5"), str(tmp_path / "empty.txt")]) == 2
