#!/usr/bin/env bash
# Builds the libFuzzer targets with clang against an existing (g++) build tree.
#
#   tests/fuzz/build.sh [BUILD_DIR] [OUT_DIR]    (defaults: build, BUILD_DIR/fuzz)
#
# The code under test (src/scenario, src/suite) and the targets are compiled by
# clang with coverage instrumentation + ASan + UBSan; everything else they call
# (runtime, transports, driver::planMatrix) comes uninstrumented from
# BUILD_DIR/src/libfabscope_core.a, linked with the libraries the fabscope
# binary uses. Object files given first on the link line win, so the archive's
# g++ copies of scenario/suite are never pulled in. Rebuilds only what changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/fuzz}
cxx=${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
[ -n "$cxx" ] || { echo "fuzz/build.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }
for need in "$build/compile_commands.json" "$build/src/libfabscope_core.a" "$build/src/CMakeFiles/fabscope.dir/link.txt"; do
  [ -e "$need" ] || { echo "fuzz/build.sh: $need missing; configure and build $build first" >&2; exit 2; }
done
# The archive's objects must match today's headers (a stale archive links, then
# crashes on a changed struct layout).
stale=$(find "$root/src" -newer "$build/src/libfabscope_core.a" \( -name '*.hpp' -o -name '*.cpp' \) -print -quit)
[ -z "$stale" ] || { echo "fuzz/build.sh: $stale is newer than $build/src/libfabscope_core.a; rebuild $build first" >&2; exit 2; }
mkdir -p "$out/obj"

# Include paths and definitions exactly as the g++ tree compiles the core.
mapfile -t cflags < <(python3 - "$build" <<'PY'
import json, shlex, sys
for c in json.load(open(sys.argv[1] + "/compile_commands.json")):
    if c["file"].endswith("/src/scenario/ScenarioLoader.cpp"):
        args = shlex.split(c["command"])
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-isystem", "-I") and i + 1 < len(args):
                print(a); print(args[i + 1]); i += 2; continue
            if a.startswith(("-I", "-D")):
                print(a)
            i += 1
        break
PY
)
# Link inputs of the fabscope binary minus its main(), paths made absolute.
mapfile -t libs < <(python3 - "$build" <<'PY'
import os, shlex, sys
src = sys.argv[1] + "/src"
args = shlex.split(open(src + "/CMakeFiles/fabscope.dir/link.txt").read())[1:]
skip_next = False
for a in args:
    if skip_next: skip_next = False; continue
    if a == "-o": skip_next = True; continue
    if a.endswith("main.cpp.o") or a in ("-O2", "-O3", "-g", "-DNDEBUG") or a.startswith("-fsanitize"): continue
    if not a.startswith("-") and not os.path.isabs(a): a = os.path.normpath(os.path.join(src, a))
    print(a)
PY
)

san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
common=(-std=c++20 -O1 -g "${san[@]}" -DOMPI_SKIP_MPICXX=1 "${cflags[@]}" -Wno-unused-command-line-argument)
headers_newest=$(find "$root/src/scenario" "$root/src/kinds" "$root/src/memory" "$root/src/driver" -name '*.hpp' -printf '%T@\n' | sort -n | tail -1)

compile() {  # compile SOURCE OBJECT EXTRA-FLAGS...
  local src=$1 obj=$2; shift 2
  if [ -e "$obj" ] && [ "$obj" -nt "$src" ] && \
     awk -v h="$headers_newest" -v o="$(stat -c %Y "$obj")" 'BEGIN{exit !(o >= h)}'; then return 0; fi
  echo "clang++ $(basename "$src")"
  nice "$cxx" "${common[@]}" "$@" -c "$src" -o "$obj"
}

core_objs=()
for src in "$root"/src/scenario/*.cpp $(find "$root/src/kinds" "$root/src/memory" -name '*.cpp' | sort); do
  obj="$out/obj/$(basename "$(dirname "$src")")_$(basename "$src" .cpp).o"
  compile "$src" "$obj" -fsanitize=fuzzer-no-link
  core_objs+=("$obj")
done
for target in scenario sizes; do
  obj="$out/obj/fuzz_$target.o"
  compile "$root/tests/fuzz/fuzz_$target.cpp" "$obj" -fsanitize=fuzzer-no-link
  echo "link $out/fuzz_$target"
  nice "$cxx" -fsanitize=fuzzer "${san[@]}" "$obj" "${core_objs[@]}" "${libs[@]}" -o "$out/fuzz_$target"
done
