#!/usr/bin/env python3
"""README's plain build on a machine that lacks one optional backend: every translation unit compiles on its own.

./tests/run builds one configuration: a unity build (eight sources a compile) with every backend this machine
has. Both hide breaks: a unity chunk lends its neighbours' includes to a source that forgot one, and code under
`#if FABSCOPE_HAVE_X` is only ever compiled one way. This check compiles (-fsyntax-only, no unity) each
translation unit of the configurations a machine without one backend gets:

  cuda-off   -DFABSCOPE_ENABLE_CUDA=OFF   (no CUDA toolkit: no CUDA kernels, no NCCL)
  nccl-off   -DFABSCOPE_ENABLE_NCCL=OFF   (CUDA without NCCL)
  ucx-off    -DFABSCOPE_ENABLE_UCX=OFF
  verbs-off  -DFABSCOPE_ENABLE_VERBS=OFF
  hwloc-off  -DFABSCOPE_ENABLE_HWLOC=OFF
  hdf5-serial  serial HDF5: the HDF5 headers without H5_HAVE_PARALLEL and FABSCOPE_HDF5_PARALLEL 0

Each "-off" configuration is a real CMake configure (its own source list, include paths and BuildConfig.hpp);
the backend's headers, still installed here, are shadowed by headers that stop the compile with #error, so a
source that includes them outside its guard fails as it would on a machine without them. hdf5-serial is not a
configure (a machine has one HDF5): it compiles against a copy of the HDF5 include folder whose H5pubconf.h
lacks H5_HAVE_PARALLEL, as serial HDF5's does, so the MPI-IO calls are undeclared there too.

To stay cheap (the default suite is near its time limit), a configuration compiles only the translation units
whose text can differ there: those whose source or any project header they include (followed through every
`#include "..."`, guarded or not) names the configuration's macro or includes its library's headers, plus any
unit only that configuration has. --every-unit compiles every unit of the configuration with every backend
found as well (no unity build: a forgotten include shows), which takes a few minutes on 2 cores.

The configure trees live in $FABSCOPE_BUILD_DIR/backend-builds/ and are reused on the next run.
Exit 0: every unit compiled; 1: a unit failed (the compiler's message and the command to repeat it are shown);
77: no C++ compiler or CMake here.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

SOURCE_DIR = Path(os.environ.get("FABSCOPE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("FABSCOPE_BUILD_DIR", SOURCE_DIR / "build"))

INCLUDE_QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
INCLUDE_ANGLED = re.compile(r"^\s*#\s*include\s*<([^>]+)>", re.M)


class Configuration:
    def __init__(self, name, cache_args, depends, header_pattern, needs_on, also=None):
        self.name = name
        self.cache_args = cache_args  # None: no configure of its own (hdf5-serial)
        # A unit is compiled here when its text (with its project headers') matches `depends`, or `also` says so.
        self.depends = re.compile(depends, re.M)
        self.header = re.compile(header_pattern)  # the library's headers (#include <...>) this configuration lacks
        self.needs_on = needs_on  # the BuildConfig.hpp macro that must be 1 in the base for this to differ from it
        self.also = also


def guarded_or_included(macros, header_pattern):
    return r"\b(" + "|".join(macros) + r")\b|^\s*#\s*include\s*<(" + header_pattern + ")"


def mpi_through_hdf5(text):
    """Parallel HDF5's hdf5.h includes mpi.h, serial HDF5's does not: a unit using MPI with hdf5.h only."""
    return (re.search(r"^\s*#\s*include\s*<hdf5\.h>", text, re.M) is not None
            and re.search(r"\bMPI_[A-Z][a-z_]", text) is not None
            and re.search(r"^\s*#\s*include\s*<mpi\.h>", text, re.M) is None)


CONFIGURATIONS = [
    Configuration("cuda-off", ["-DFABSCOPE_ENABLE_CUDA=OFF"],
                  guarded_or_included(["FABSCOPE_HAVE_CUDA", "FABSCOPE_HAVE_NCCL"], "cuda|nccl|nvml|cublas|curand"),
                  r"cuda|nccl|nvml|cublas|curand|nvtx", "FABSCOPE_HAVE_CUDA"),
    Configuration("nccl-off", ["-DFABSCOPE_ENABLE_NCCL=OFF"], guarded_or_included(["FABSCOPE_HAVE_NCCL"], "nccl"),
                  r"nccl", "FABSCOPE_HAVE_NCCL"),
    Configuration("ucx-off", ["-DFABSCOPE_ENABLE_UCX=OFF"], guarded_or_included(["FABSCOPE_HAVE_UCX"], "uc[pstm]/"),
                  r"uc[pstm]/", "FABSCOPE_HAVE_UCX"),
    Configuration("verbs-off", ["-DFABSCOPE_ENABLE_VERBS=OFF"],
                  guarded_or_included(["FABSCOPE_HAVE_VERBS"], "infiniband/"), r"infiniband/", "FABSCOPE_HAVE_VERBS"),
    Configuration("hwloc-off", ["-DFABSCOPE_ENABLE_HWLOC=OFF"], guarded_or_included(["FABSCOPE_HAVE_HWLOC"], "hwloc"),
                  r"hwloc", "FABSCOPE_HAVE_HWLOC"),
    # Only the units that use HDF5's parallel API (or MPI through hdf5.h): hdf5.h itself compiles either way.
    Configuration("hdf5-serial", None,
                  r"\b(FABSCOPE_HDF5_PARALLEL|H5_HAVE_PARALLEL|H5FD_MPIO\w*|H5\w*(mpio|_mpi_|_coll_|_all_coll)\w*)\b",
                  r"(?!)", "FABSCOPE_HDF5_PARALLEL", also=mpi_through_hdf5),
]


def cache_value(cache, key):
    if not cache.exists():
        return None
    for line in cache.read_text(errors="replace").splitlines():
        if line.startswith(key + ":"):
            return line.split("=", 1)[1]
    return None


def configure(tree, extra_args):
    """A non-unity configure of the whole tree (unit tests included) into `tree`; returns its compile database."""
    tree.mkdir(parents=True, exist_ok=True)
    args = ["cmake", "-S", str(SOURCE_DIR), "-B", str(tree), "-DCMAKE_UNITY_BUILD=OFF", "-DFABSCOPE_BUILD_TESTS=ON",
            "-DFABSCOPE_BUILD_UNIT_TESTS=ON", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DFABSCOPE_SANITIZE=OFF",
            "-DFABSCOPE_FUZZ=OFF"]
    # The compilers of the suite's own build, where it has one.
    main_cache = BUILD_DIR / "CMakeCache.txt"
    for key in ("CMAKE_CXX_COMPILER", "CMAKE_C_COMPILER"):
        value = cache_value(main_cache, key)
        if value and not (tree / "CMakeCache.txt").exists():
            args.append(f"-D{key}={value}")
    result = subprocess.run(args + extra_args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-3000:] + result.stderr[-3000:])
        raise SystemExit(f"check_backend_builds: configuring {tree} failed ({' '.join(args + extra_args)})")
    return json.loads((tree / "compile_commands.json").read_text())


def build_config(tree):
    text = (tree / "generated" / "fabscope" / "BuildConfig.hpp").read_text()
    return {m.group(1): m.group(2) for m in re.finditer(r"#define (\w+) (\S+)", text)}


class Unit:
    """One translation unit of a compile database: its command without the object output, and -fsyntax-only."""

    def __init__(self, entry):
        self.file = Path(entry["file"])
        self.directory = entry["directory"]
        args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
        if "-o" in args:
            i = args.index("-o")
            del args[i:i + 2]
        self.args = args + ["-fsyntax-only"]

    def include_dirs(self):
        dirs, i = [], 0
        while i < len(self.args):
            a = self.args[i]
            for flag in ("-I", "-isystem", "-iquote"):
                if a == flag and i + 1 < len(self.args):
                    dirs.append(Path(self.args[i + 1]))
                    i += 1
                elif a.startswith(flag) and len(a) > len(flag) and flag == "-I":
                    dirs.append(Path(a[2:]))
            i += 1
        return dirs


class ProjectText:
    """The text of a unit and of every project header it reaches through #include "..." (guarded or not)."""

    def __init__(self):
        self.cache = {}
        self.roots = (SOURCE_DIR.resolve(), BUILD_DIR.resolve())

    def read(self, path):
        if path not in self.cache:
            try:
                self.cache[path] = path.read_text(errors="replace")
            except OSError:
                self.cache[path] = ""
        return self.cache[path]

    def closure(self, unit, tree):
        include_dirs = [d for d in unit.include_dirs() if self.in_project(d, tree)]
        seen, to_visit = [], [unit.file.resolve()]
        while to_visit:
            path = to_visit.pop()
            if path in seen:
                continue
            seen.append(path)
            for name in INCLUDE_QUOTED.findall(self.read(path)):
                for d in [path.parent] + include_dirs:
                    candidate = (d / name).resolve()
                    if candidate.is_file():
                        to_visit.append(candidate)
                        break
        # BuildConfig.hpp defines the macros: including it alone does not make a unit depend on one.
        return [p for p in seen if not str(p).endswith("generated/fabscope/BuildConfig.hpp")]

    def in_project(self, d, tree):
        d = d.resolve()
        return any(d == r or r in d.parents for r in self.roots + (tree.resolve(),))


def poison_headers(folder, configuration, header_names, macro):
    """Headers of the library a configuration lacks, each stopping the compile: found before the installed ones."""
    shutil.rmtree(folder, ignore_errors=True)
    for name in sorted(header_names):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'#error "<{name}> included in a build without it ({configuration}: {macro} 0): '
                          f'the include and every use belong under #if {macro}"\n')
    return ["-I" + str(folder)]


def serial_hdf5_flags(folder, units):
    """An HDF5 include folder as serial HDF5 installs it (H5pubconf.h without H5_HAVE_PARALLEL), and a
    BuildConfig.hpp with FABSCOPE_HDF5_PARALLEL 0, both found before the real ones."""
    real = None
    for unit in units:
        for d in unit.include_dirs() + [Path("/usr/include"), Path("/usr/local/include")]:
            if (d / "H5pubconf.h").is_file():
                real = d
                break
        if real:
            break
    if real is None:
        return None
    shutil.rmtree(folder, ignore_errors=True)
    headers = folder / "hdf5"
    headers.mkdir(parents=True)
    for entry in real.iterdir():
        if entry.name != "H5pubconf.h":
            (headers / entry.name).symlink_to(entry.resolve())
    conf = (real / "H5pubconf.h").read_text()
    serial = re.sub(r"^#define H5_HAVE_PARALLEL .*$", "/* serial HDF5 */", conf, flags=re.M)
    (headers / "H5pubconf.h").write_text(serial)
    return ["-I" + str(headers)]


def with_build_config(unit, folder, overrides):
    generated = folder / "generated" / "fabscope"
    if not (generated / "BuildConfig.hpp").exists():
        real = None
        for d in unit.include_dirs():
            if (d / "fabscope" / "BuildConfig.hpp").is_file():
                real = d / "fabscope" / "BuildConfig.hpp"
        text = real.read_text()
        for key, value in overrides.items():
            text = re.sub(rf"^#define {key} .*$", f"#define {key} {value}", text, flags=re.M)
        generated.mkdir(parents=True, exist_ok=True)
        (generated / "BuildConfig.hpp").write_text(text)
    return ["-I" + str(folder / "generated")]


def compile_unit(unit, extra_flags):
    args = unit.args[:1] + extra_flags + unit.args[1:]
    t0 = time.monotonic()
    result = subprocess.run(args, cwd=unit.directory, capture_output=True, text=True)
    return unit, args, result, time.monotonic() - t0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every-unit", action="store_true",
                        help="also compile every unit of the configuration with every backend found")
    parser.add_argument("--only", action="append", default=[], help="only this configuration (repeatable)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    options = parser.parse_args()
    if shutil.which("cmake") is None:
        print("check_backend_builds: no cmake here")
        return 77
    t_start = time.monotonic()
    work = BUILD_DIR / "backend-builds"
    wanted = [c for c in CONFIGURATIONS if not options.only or c.name in options.only]

    # The base (every backend this machine has) and each "-off" configure, two at a time.
    base_tree = work / "base"
    base_db = configure(base_tree, [])
    base = build_config(base_tree)
    if not any(u["file"].endswith((".cpp", ".cc", ".cxx")) for u in base_db):
        print("check_backend_builds: the compile database has no C++ unit")
        return 77
    active = []
    for c in wanted:
        if base.get(c.needs_on, "0") != "1":
            print(f"{c.name}: {c.needs_on} is already 0 in this machine's build, which the suite compiles")
        else:
            active.append(c)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        dbs = dict(zip([c.name for c in active],
                       pool.map(lambda c: configure(work / c.name, c.cache_args) if c.cache_args else base_db,
                                active)))
    t_configured = time.monotonic()

    text = ProjectText()
    base_files = {u["file"] for u in base_db}
    jobs = []  # (configuration, unit, extra flags)
    notes = []
    for c in active:
        tree = work / c.name if c.cache_args else base_tree
        units = [Unit(u) for u in dbs[c.name]]
        skipped = [u for u in units if u.file.suffix not in (".cpp", ".cc", ".cxx")]
        units = [u for u in units if u.file.suffix in (".cpp", ".cc", ".cxx")]
        chosen, headers = [], set()
        for u in units:
            closure = text.closure(u, tree)
            joined = "\n".join(text.read(p) for p in closure)
            headers.update(h for h in INCLUDE_ANGLED.findall(joined) if c.header.match(h))
            if str(u.file) not in base_files or c.depends.search(joined) or (c.also and c.also(joined)):
                chosen.append(u)
        if c.cache_args:
            flags = poison_headers(work / "poison" / c.name, c.name, headers, c.needs_on)
        else:
            flags = serial_hdf5_flags(work / "hdf5-serial", units)
            if flags is None:
                print("hdf5-serial: no H5pubconf.h found in the units' include folders; not checked")
                continue
            flags = with_build_config(units[0], work / "hdf5-serial", {"FABSCOPE_HDF5_PARALLEL": 0}) + flags
        notes.append(f"{c.name}: {len(chosen)} of {len(units)} units depend on it"
                     + (f" ({len(skipped)} CUDA units are not compiled by this check)" if skipped else ""))
        jobs += [(c.name, u, flags) for u in chosen]
    if options.every_unit:
        jobs += [("base", Unit(u), []) for u in base_db if u["file"].endswith((".cpp", ".cc", ".cxx"))]
        notes.append(f"base: every unit ({sum(1 for j in jobs if j[0] == 'base')}) with every backend found")

    failures = []
    warnings = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        futures = {pool.submit(compile_unit, u, flags): name for name, u, flags in jobs}
        for future in concurrent.futures.as_completed(futures):
            unit, args, result, _ = future.result()
            name = futures[future]
            if result.returncode != 0:
                failures.append((name, unit, args, result.stderr))
            elif "warning:" in result.stderr:
                warnings.setdefault(name, []).append(unit.file)
    for line in notes:
        print(line)
    for name, files in sorted(warnings.items()):
        print(f"{name}: compiler warnings in {len(files)} unit(s) (not an error): "
              + ", ".join(str(f.relative_to(SOURCE_DIR)) for f in sorted(files)))
    elapsed = time.monotonic() - t_start
    print(f"configure {t_configured - t_start:.0f} s, {len(jobs)} compiles, {elapsed:.0f} s in all")
    if failures:
        for name, unit, args, stderr in sorted(failures, key=lambda f: (f[0], str(f[1].file))):
            errors = [line for line in stderr.splitlines() if "error" in line][:8]
            print(f"\nFAIL {name}: {unit.file.relative_to(SOURCE_DIR)} does not compile")
            print("\n".join("  " + line for line in errors))
            print("  repeat: cd " + shlex.quote(unit.directory) + " && " + shlex.join(args))
        print(f"\n{len(failures)} unit(s) do not compile in a configuration README's build can have")
        return 1
    print(f"every unit that depends on an optional backend compiles without it ({len(jobs)} compiles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
