#!/usr/bin/python3
"""Which folder of src/ may include which: the layers, checked on every #include "...".

The table below is the one statement of the rules (docs/architecture.md shows it,
and this check fails when the two differ). Layers go from the bottom up:

- a folder may include its own folder and any folder of a lower layer;
- folders of one layer may not include each other, unless PEER_USES declares it;
- a sealed folder (a kind family) is included only by itself and by the families
  PEER_USES declares: everything else reaches a kind through the kind interface;
- ONLY narrows what a folder may include to the folders it names.

Besides the rules, the folder graph and the header graph must have no circle.
Each broken rule prints as
    FILE:LINE: include "X" (folder A may not include folder B: WHY)

usage: check_include_rules.py [--graph] [--rules]
  --graph  also print the folder graph: every edge with its count of includes
  --rules  print the rule table as docs/architecture.md shows it, and exit
Exit 0 when every include keeps the rules and nothing is circular, 1 otherwise.
"""
import os
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(os.environ.get("FABSCOPE_SOURCE_DIR") or Path(__file__).resolve().parents[2])
DOC = ROOT / "docs" / "architecture.md"

# Every folder of src/kinds/ is a kind family (it owns its build lines): found, not listed,
# so a new family needs no line here unless it uses another family (PEER_USES).
FAMILIES = sorted(f"kinds/{d.name}" for d in (ROOT / "src" / "kinds").iterdir() if d.is_dir())

# Bottom to top: (layer, its folders). "generated" is the build's generated
# headers (fabscope/BuildConfig.hpp), "kernels" the top-level kernels/ folder
# (cuda/, host/), "main" is src/main.cpp.
LAYERS = [
    ("build", ["generated", "kernels"]),
    ("runtime", ["runtime"]),
    ("libraries", ["stats", "model", "topology", "output", "inventory"]),
    ("scenario", ["scenario"]),
    # A transport's table entry parses its own keys of the scenario file.
    ("transports", ["transport"]),
    ("services", ["memory", "kv", "validity"]),
    ("kind interface", ["kinds"]),
    ("kinds", FAMILIES + ["conditions"]),
    ("driver", ["driver"]),
    ("commands", ["quickcheck"]),
    ("command line", ["cli"]),
    ("main", ["main"]),
]

SEALED = set(FAMILIES)

# Declared uses between folders of one layer, each with its reason.
PEER_USES = {
    ("kinds/mix", "kinds/api"): "the serving mix runs the api kind's traffic (api::runApiGroup)",
    ("kinds/mix", "kinds/collectives"): "the serving mix runs the all-to-all through moe::MoeExchange",
    ("kinds/mix", "kinds/kvpush"): "the serving mix runs the KV schedule of kvpush",
    ("kinds/incast", "kinds/p2p"): "incast's latency probe is the point-to-point ping-pong",
    ("kinds/reference", "kinds/api"): "the reference server's address is chosen as the api kind chooses its own",
}

# Folders that may include only these (besides themselves), and why.
ONLY = {
    "quickcheck": {"generated", "runtime", "inventory", "transport", "scenario"},
}
ONLY_WHY = {
    "quickcheck": "a node health check: it reads the host and runs its own loop, never the test matrix",
}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".hpp.in", ".h.in")


def layer_of():
    return {folder: index for index, (_, folders) in enumerate(LAYERS) for folder in folders}


def folder_of_source(relative):
    """The folder of a file under src/ ('kinds/p2p/X.cpp' -> 'kinds/p2p')."""
    parts = relative.split("/")
    if len(parts) == 1:
        return "main"
    if parts[0] == "kinds" and len(parts) > 2:
        return "kinds/" + parts[1]
    return parts[0]


def folder_of_include(target, including_dir):
    """(folder, resolved path or None) of an include's target, None when no folder holds it."""
    first = target.split("/")[0]
    if first == "fabscope":
        return "generated", None
    if (ROOT / "kernels" / target).is_file():
        return "kernels", ROOT / "kernels" / target
    if (ROOT / "src" / target).is_file() or (ROOT / "src" / (target + ".in")).is_file():
        path = ROOT / "src" / target
        return folder_of_source(target), path if path.is_file() else None
    if (ROOT / "src" / first / "CMakeLists.txt").is_file():
        return folder_of_source(target), None  # generated into a layer folder (inventory/LauncherVariables.hpp)
    beside = including_dir / target
    if beside.is_file():
        return folder_of_source(str(beside.relative_to(ROOT / "src"))), beside
    return None, None


def why_not(source, target, layers):
    """None when `source` may include `target`, else the reason it may not."""
    if source == target:
        return None
    if source in ONLY and target not in ONLY[source]:
        return f"{source} may include only {', '.join(sorted(ONLY[source]))}"
    if (source, target) in PEER_USES:
        return None
    if target in SEALED:
        return "a kind family is reached only through the kind interface (Kind.hpp, the registry)"
    if layers[target] > layers[source]:
        return f"layer '{LAYERS[layers[target]][0]}' is above layer '{LAYERS[layers[source]][0]}'"
    if layers[target] == layers[source]:
        return f"both are in layer '{LAYERS[layers[source]][0]}' and no use between them is declared"
    return None


def sources():
    for path in sorted((ROOT / "src").rglob("*")):
        if path.is_file() and path.name.endswith(SOURCE_SUFFIXES):
            yield path


def scan():
    """Every include as (file, line, target, source folder, target folder, resolved path)."""
    found = []
    for path in sources():
        relative = str(path.relative_to(ROOT / "src"))
        source = folder_of_source(relative)
        with open(path, encoding="utf-8", errors="replace") as text:
            for number, line in enumerate(text, 1):
                match = INCLUDE.match(line)
                if match:
                    target, resolved = folder_of_include(match.group(1), path.parent)
                    found.append((path, number, match.group(1), source, target, resolved))
    return found


def circles(edges):
    """The strongly connected parts of more than one node (or with a self edge): Tarjan, iterative."""
    index, low, on_stack, stack, parts = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1 or node in edges.get(node, ()):
                    parts.append(sorted(part))
    return parts


def rules_table():
    """The rule table as markdown, the way docs/architecture.md shows it."""
    lines = ["| layer (bottom to top) | folders |", "| --- | --- |"]
    for number, (name, folders) in enumerate(LAYERS):
        shown = ", ".join(f"`{f}`" for f in folders if f not in SEALED)
        if any(f in SEALED for f in folders):
            shown = "`kinds/<family>` (every folder of src/kinds/, each sealed)" + (", " + shown if shown else "")
        lines.append(f"| {number} {name} | {shown} |")
    lines += ["", "| folder | may include, beyond its own folder and lower layers | why |", "| --- | --- | --- |"]
    for (source, target), why in sorted(PEER_USES.items()):
        lines.append(f"| `{source}` | `{target}` | {why} |")
    for source, targets in sorted(ONLY.items()):
        lines.append(f"| `{source}` | only {', '.join(f'`{t}`' for t in sorted(targets))} | {ONLY_WHY[source]} |")
    return lines


def check_table(layers):
    problems = []
    for source, target in list(PEER_USES) + [(f, t) for f, ts in ONLY.items() for t in ts]:
        for folder in (source, target):
            if folder not in layers:
                problems.append(f"{Path(__file__).name}: folder {folder} is in no layer")
    for folder in sorted((ROOT / "src").iterdir()):
        if folder.is_dir() and folder.name not in layers:
            problems.append(f"src/{folder.name}: a folder in no layer: add it to LAYERS in "
                            f"{Path(__file__).relative_to(ROOT)} (and docs/architecture.md, printed by --rules)")
    doc = DOC.read_text(encoding="utf-8") if DOC.is_file() else ""
    for line in rules_table():
        if line not in doc:
            problems.append(f"{DOC.relative_to(ROOT)}: the rule table differs from {Path(__file__).name} "
                            f"(print it with --rules); missing: {line}")
            break
    return problems


def main(argv):
    if "--rules" in argv:
        print("\n".join(rules_table()))
        return 0
    layers = layer_of()
    problems = check_table(layers)
    includes = scan()
    folder_edges, file_edges = Counter(), defaultdict(set)
    violations = climbs = 0
    for path, number, text, source, target, resolved in includes:
        where = f"{path.relative_to(ROOT)}:{number}"
        if target is None:
            problems.append(f'{where}: include "{text}" (no folder of src/ or kernels/ holds it)')
            violations += 1
            continue
        if resolved is not None and resolved.suffix != ".in":
            file_edges[str(path.relative_to(ROOT))].add(str(resolved.relative_to(ROOT)))
        if target == source:
            continue
        folder_edges[(source, target)] += 1
        unplaced = [f for f in (source, target) if f not in layers]
        if unplaced:
            problems += [f'{where}: include "{text}": folder {f} is in no layer; add it to LAYERS in '
                         f'{Path(__file__).relative_to(ROOT)} (and the table in docs/architecture.md, '
                         f'printed by --rules)' for f in unplaced]
            violations += 1
            continue
        reason = why_not(source, target, layers)
        if reason:
            climbs += layers[target] > layers[source]
            problems.append(f'{where}: include "{text}" (folder {source} may not include folder {target}: {reason})')
            violations += 1
    folder_graph = defaultdict(set)
    for source, target in folder_edges:
        folder_graph[source].add(target)
    for part in circles(folder_graph):
        problems.append("folder circle: " + " <-> ".join(part))
    for part in circles(file_edges):
        problems.append("header circle: " + " <-> ".join(part))
    if "--graph" in argv:
        print("folder graph (includes between folders, lowest layer first):")
        for (source, target), count in sorted(folder_edges.items(), key=lambda e: (layers.get(e[0][0], -1), e[0])):
            print(f"  {source:18} -> {target:18} {count:4}")
        print(f"{len(includes)} includes, {len(folder_edges)} folder edges, {violations} broken rules "
              f"({climbs} climbing up a layer), {len(circles(folder_graph))} folder circles, "
              f"{len(circles(file_edges))} header circles")
    for problem in problems:
        print(problem)
    if problems:
        print(f"include rules: {len(problems)} problems (the rules: {Path(__file__).name}, docs/architecture.md)")
        return 1
    print(f"include rules: {len(includes)} includes in src/ keep the rules; no circles")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
