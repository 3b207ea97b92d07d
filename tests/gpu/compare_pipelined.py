#!/usr/bin/env python3
"""fabscope's two all-reduce figures against NVIDIA's nccl-tests (run-pipelined-vs-nccl-tests.sh).

    compare_pipelined.py FABSCOPE.h5 NCCL_TESTS_DEFAULT.txt [NCCL_TESTS_Z3.txt] [--alltoall A2A.h5]

nccl-tests' default (all_reduce_perf -n 20, no -z) launches its calls back to back and
divides the total time by their number: fabscope's pipelined figure is the same
convention (pipelined_busbw_gbps). With -z 3 nccl-tests waits after every call: close to
fabscope's per-call figure (busbw_gbps, median of the slowest rank per call). Both use
nccl-tests' out-of-place busbw column (fabscope's buffers are distinct). Target (issue
17): the pipelined busbw within 3 % of nccl-tests' default from 16 MiB up. Exit 0 when
it is met, 1 when not, 2 on unreadable input."""
import argparse
import sys

TARGET_FROM = 16 << 20
TOLERANCE = 0.03


def nccl_tests_busbw(path):
    """{bytes: out-of-place busbw GB/s} from an nccl-tests *_perf output."""
    out = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 13 and not line.lstrip().startswith("#") and fields[0].isdigit():
                out[int(fields[0])] = float(fields[7])
    if not out:
        raise ValueError(f"{path}: no result rows (is it an nccl-tests *_perf output?)")
    return out


def fabscope_attrs(path, kind):
    import h5py
    rows = []
    with h5py.File(path, "r") as f:
        for _, g in sorted(f["tests"].items()):
            a = dict(g.attrs)
            if a.get("kind") == kind:
                rows.append(a)
    if not rows:
        raise ValueError(f"{path}: no {kind} test")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("fabscope")
    p.add_argument("nccl_tests")
    p.add_argument("nccl_tests_z3", nargs="?")
    p.add_argument("--alltoall")
    args = p.parse_args(argv)
    try:
        ref = nccl_tests_busbw(args.nccl_tests)
        ref_z3 = nccl_tests_busbw(args.nccl_tests_z3) if args.nccl_tests_z3 else {}
        ours = {int(a["bytes"]): a for a in fabscope_attrs(args.fabscope, "allreduce")}
    except (OSError, ValueError, KeyError) as e:
        print(f"compare_pipelined: {e}", file=sys.stderr)
        return 2
    print("| size | nccl-tests busbw (back to back) | fabscope pipelined busbw | ratio | "
          "nccl-tests -z 3 busbw | fabscope per-call busbw | ratio | target |")
    print("|---|---|---|---|---|---|---|---|")
    met = True
    for size in sorted(ours):
        a = ours[size]
        if a.get("status") != "passed":
            print(f"| {size >> 20} MiB | fabscope {a.get('status')}: {a.get('error')} |")
            met = False
            continue
        pipelined, per_call = float(a["pipelined_busbw_gbps"]), float(a["busbw_gbps"])
        r = ref.get(size)
        ratio = pipelined / r if r else None
        z3 = ref_z3.get(size)
        target = "-"
        if size >= TARGET_FROM:
            ok = ratio is not None and abs(ratio - 1) <= TOLERANCE
            met &= ok
            target = "within 3 %: " + ("met" if ok else "NOT met")
        cell = lambda v, fmt="{:.1f} GB/s": fmt.format(v) if v is not None else "-"  # noqa: E731
        print(f"| {size >> 20} MiB | {cell(r)} | {cell(pipelined)} | {cell(ratio, '{:.3f}')} | {cell(z3)} | "
              f"{cell(per_call)} | {cell(per_call / z3 if z3 else None, '{:.3f}')} | {target} |")
    print("target (pipelined busbw within 3 % of nccl-tests from 16 MiB up): " + ("met" if met else "NOT met"))
    if args.alltoall:
        try:
            rows = fabscope_attrs(args.alltoall, "alltoall")
        except (OSError, ValueError) as e:
            print(f"compare_pipelined: {e}", file=sys.stderr)
            return 2
        print()
        print("| test | tokens/rank | routing | status | dispatch p50 | dispatch busbw per call / pipelined | "
              "combine p50 | combine busbw per call / pipelined | load imbalance |")
        print("|---|---|---|---|---|---|---|---|---|")
        for a in rows:
            routing = str(a.get("popularity"))
            if routing == "zipf":
                routing += f" s={float(a['zipf_exponent']):g}"
            print(f"| {a.get('name')} | {int(a['tokens_per_rank'])} | {routing} | {a.get('status')} | "
                  f"{float(a['dispatch_p50_ns']) / 1e3:.1f} us | {float(a['dispatch_busbw_gbps']):.1f} / "
                  f"{float(a['dispatch_pipelined_busbw_gbps']):.1f} GB/s | {float(a['combine_p50_ns']) / 1e3:.1f} us | "
                  f"{float(a['combine_busbw_gbps']):.1f} / {float(a['combine_pipelined_busbw_gbps']):.1f} GB/s | "
                  f"{float(a['load_imbalance']):.2f} |")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
