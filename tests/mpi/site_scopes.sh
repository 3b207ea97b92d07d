# Site scopes: 4 ranks in two sites (ranks 0,1 in dcA, 2,3 in dcB). Samples inside
# a site and between sites are never summarised together: the file's /scopes
# table, the per-rank summary, the closing table and the Python analysis each
# keep site=dcA, site=dcB and inter-site dcA<->dcB apart, and the all-reduce
# group across both sites is flagged.
# Labels come from a --topology file (root: each rank gets its own host name in a
# UTS namespace) and from Slurm's SLURM_TOPOLOGY_ADDR set per rank (no root needed).
# ctest-parts: topology slurm
# ctest-labels: shares-machine
# (it checks files, messages or packages, not time: tests/run runs two such tests at a time)
source "$(dirname "$0")/lib.bash"
cat > "$scratch/scopes.yaml" <<'YAML'
name: site-scopes
defaults: {iterations: 40, warmup: 5, timeout: 60s}
tests:
  - name: lat-all
    kind: latency
    pattern: all-pairs
    sizes: [8]
  - name: bw-pairs
    kind: bandwidth
    pattern: pairs
    window: 4
    sizes: [64KiB]
  - name: tp-allreduce
    kind: allreduce
    sizes: [16KiB]
YAML
cat > "$scratch/topology.yaml" <<'YAML'
hosts:
  "scope-a-*": {site: dcA, pod: pa, leaf: la}
  "scope-b-*": {site: dcB, pod: pb, leaf: lb}
YAML

check() {  # FILE STDOUT
  /usr/bin/python3 - "$1" "$2" "$FABSCOPE_SOURCE_DIR/analysis" <<'PY'
import math, sys
import h5py, numpy as np
path, stdout, analysis = sys.argv[1:4]
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(path, "r") as f:
    assert int(f.attrs["exit_code"]) == 0 and int(f.attrs["complete"]) == 1
    site = {int(r["rank"]): text(r["site"]) for r in f["ranks"][()]}
    assert site == {0: "dcA", 1: "dcA", 2: "dcB", 3: "dcB"}, site
    def scope_of(r, p, group):
        if p < 0:
            sites = sorted({site[g] for g in group})
            return ("group across " if len(sites) > 1 else "group site=") + ",".join(sites)
        if site[r] == site[p]:
            return "site=" + site[r]
        return "inter-site %s<->%s" % tuple(sorted((site[r], site[p])))
    def order(name):  # sites, then inter-site pairs, then groups
        return (not name.startswith("site="), name.startswith("group"), name)
    by_name = {}
    for index, g in f["tests"].items():
        a = g.attrs
        assert text(a["status"]) == "passed", text(a["error"])
        by_name.setdefault((text(a["name"]), text(a["pass"])), []).append(index)
        group = [int(x) for x in text(a["canaries"]).split(",")]
        s = g["samples"][()]
        s = s[(s["flags"] & 0xff00) == 0]
        lat = (s["t_done_ns"] - s["t_post_ns"]) / float(a["sample_divisor"])
        names = np.array([scope_of(int(r), int(p), group) for r, p in zip(s["rank"], s["peer"])])
        want = sorted(set(names.tolist()), key=order)
        assert text(a["site_scopes"]).split(";") == want, (index, text(a["site_scopes"]), want)
        table = g["scopes"][()]
        assert [text(x) for x in table["scope"]] == want, (index, table["scope"], want)
        for row in table:
            name = text(row["scope"])
            mine = lat[names == name]
            assert row["samples"] == len(mine) > 0, (index, name, row["samples"], len(mine))
            assert math.isclose(row["p50_ns"], np.percentile(mine, 50), rel_tol=1e-9), (index, name)
            assert math.isclose(row["p99_ns"], np.percentile(mine, 99), rel_tol=1e-9), (index, name)
            assert math.isclose(row["max_ns"], mine.max(), rel_tol=1e-9), (index, name)
            assert row["crosses_sites"] == (0 if name.startswith("site=") else 1), (index, name)
        # The per-rank summary: one row per rank and scope, never a mix.
        summ = g["summary"][()]
        per = {(int(r["rank"]), text(r["scope"])): int(r["samples"]) for r in summ}
        expect = {}
        for r, n in zip(s["rank"], names):
            expect[(int(r), str(n))] = expect.get((int(r), str(n)), 0) + 1
        assert per == expect, (index, per, expect)
        if len(want) > 1:  # several scopes: no headline number over all of them
            assert math.isnan(a["p50_ns"]) and math.isnan(a["p99_ns"]), index
        else:               # one scope: the headline is that scope
            assert math.isclose(a["p50_ns"], table["p50_ns"][0], rel_tol=1e-9), index
    lat_all = f["tests/" + by_name[("lat-all", "parallel")][0]]
    assert text(lat_all.attrs["site_scopes"]) == "site=dcA;site=dcB;inter-site dcA<->dcB"
    m = lat_all["pair_matrix"][()]
    assert np.isfinite(m[0, 2]) and np.isfinite(m[0, 1])  # the pair matrix still holds every pair
    tp = f["tests/" + by_name[("tp-allreduce", "parallel")][0]]
    assert text(tp.attrs["site_scopes"]) == "group across dcA,dcB"
    assert text(tp.attrs["spans_sites"]) == "dcA,dcB"
    bw = f["tests/" + by_name[("bw-pairs", "parallel")][0]]
    assert bw["scopes"][()]["gbps_p50"].min() > 0

out = open(stdout).read()
for needle in ("scope", "site=dcA", "site=dcB", "inter-site dcA<->dcB", "group across dcA,dcB",
               "group spans sites dcA,dcB: a WAN path"):
    assert needle in out, f"closing table lacks {needle!r}:\n{out}"
assert " nan" not in out, out

# The Python analysis splits the same way and gets the same numbers.
sys.path.insert(0, analysis)
from fabscope_analysis import open_result
from fabscope_analysis.run_analysis import RunAnalysis
with open_result(path) as run:
    frame = RunAnalysis(run).summary_frame()
    with h5py.File(path, "r") as f:
        for index in range(len(f["tests"])):
            rows = frame[frame["index"] == index]
            table = f["tests/%04d/scopes" % index][()]
            assert list(rows["scope"]) == [text(x) for x in table["scope"]], (index, list(rows["scope"]))
            metric = text(f["tests/%04d" % index].attrs["metric"])
            for (_, r), t in zip(rows.iterrows(), table):
                assert r["samples"] == t["samples"], (index, r["scope"])
                want = t["p50_ns"] / 1e3 if metric == "latency" else t["gbps_p50"]
                assert math.isclose(r["p50"], want, rel_tol=1e-6), (index, r["scope"], r["p50"], want)
print("site scopes: file, closing table and analysis keep the sites apart")
PY
}

if ! part_wanted topology; then
  :
elif [ "$(id -u)" = 0 ] && unshare --uts true 2>/dev/null; then
  # Two host names on this machine: each rank in its own UTS namespace.
  run_mpi -np 2 unshare --uts sh -c 'hostname scope-a-node && exec "$0" "$@"' "$FABSCOPE_BIN" run \
      --scenario "$scratch/scopes.yaml" --output "$scratch/file.h5" --no-progress --topology "$scratch/topology.yaml" \
    : -np 2 unshare --uts sh -c 'hostname scope-b-node && exec "$0" "$@"' "$FABSCOPE_BIN" run \
      --scenario "$scratch/scopes.yaml" --output "$scratch/file.h5" --no-progress --topology "$scratch/topology.yaml" \
    > "$scratch/file.out"
  check "$scratch/file.h5" "$scratch/file.out"
else
  skip_part topology "not root: the --topology part needs UTS namespaces"
fi
part_wanted slurm || exit 0

# The same split from Slurm's per-rank topology address (three switch levels: the top one is the site).
pattern=SLURM_TOPOLOGY_ADDR_PATTERN=switch.switch.switch.node
run_mpi -np 2 env SLURM_TOPOLOGY_ADDR=dcA.pa.la.n1 $pattern "$FABSCOPE_BIN" run \
    --scenario "$scratch/scopes.yaml" --output "$scratch/slurm.h5" --no-progress \
  : -np 2 env SLURM_TOPOLOGY_ADDR=dcB.pb.lb.n2 $pattern "$FABSCOPE_BIN" run \
    --scenario "$scratch/scopes.yaml" --output "$scratch/slurm.h5" --no-progress \
  > "$scratch/slurm.out"
check "$scratch/slurm.h5" "$scratch/slurm.out"
