#!/usr/bin/env bash
# tests/run stage: builds the libFuzzer targets with clang against the normal
# build tree, replays every regression input, then fuzzes each target for a
# short while (FUZZ_SECONDS, default 20) starting from the corpus in the tree.
# A crash leaves its input under build/fuzz/artifacts/ and fails the stage;
# docs/hardening.md says how to turn it into a regression input.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
build=${FABSCOPE_BUILD_DIR:-$root/build}
out=$build/fuzz
seconds=${FUZZ_SECONDS:-20}

tests/fuzz/build.sh "$build" "$out" || exit 1
mkdir -p "$out/artifacts"
status=0
for target in scenario sizes; do
  bin=$out/fuzz_$target
  # A target without a regression folder has no regression inputs yet.
  regressions=()
  if [ -d "$root/tests/fuzz/regressions/$target" ]; then
    mapfile -t regressions < <(find "$root/tests/fuzz/regressions/$target" -type f ! -name '*.md' | sort)
  fi
  if [ ${#regressions[@]} -gt 0 ]; then
    echo "fuzz_$target: replaying ${#regressions[@]} regression inputs"
    "$bin" -runs=0 "${regressions[@]}" > "$out/replay-$target.log" 2>&1 || {
      echo "fuzz_$target: a regression input fails again:"; tail -40 "$out/replay-$target.log"; status=1; continue; }
  fi
  # New inputs go to a scratch corpus; the corpus in the tree is only read.
  work=$(mktemp -d "$out/corpus-$target.XXXXXX")
  echo "fuzz_$target: fuzzing for ${seconds}s"
  timeout --kill-after=10 $((seconds + 60)) "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=16384 -dict="$root/tests/fuzz/$target.dict" -artifact_prefix="$out/artifacts/$target-" \
    -print_final_stats=1 "$work" "$root/tests/fuzz/corpus/$target" > "$out/fuzz-$target.log" 2>&1
  rc=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "$out/fuzz-$target.log" | sed "s/^/fuzz_$target: /"
  if [ $rc -ne 0 ]; then
    echo "fuzz_$target: FAILED (exit $rc):"; grep -E 'BUG:|ERROR:|SUMMARY:|Test unit written' "$out/fuzz-$target.log" | head -20
    status=1
  fi
  rm -rf "$work"
done
exit $status
