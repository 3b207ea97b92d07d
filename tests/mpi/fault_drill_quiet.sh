# The end of a fault drill is quiet: the shipped drill (scenarios/fault-drill.yaml,
# UCX, 4 local ranks, the victim killed) through the documented launch ends
# with exit 0 and without UCX's warnings. Its client leaves hundreds of requests
# to the lost worker behind; the UCX transport used to wait 5 s for sends that
# cannot be cancelled and then destroy its worker with them, and UCX printed one
# "... was not returned to mpool ucp_requests" line per request (about 860 here)
# plus "unexpected tag-receive descriptor ... was not matched" for messages that
# arrived for no receive. Now sends end with their endpoint, closed by force,
# and such messages are received into scratch memory before the worker goes.
source "$(dirname "$0")/lib.bash"
config=${FABSCOPE_BUILD_DIR:-$(dirname "$FABSCOPE_BIN")}/generated/fabscope/BuildConfig.hpp
grep -q "FABSCOPE_HAVE_UCX 1" "$config" 2>/dev/null || { echo "fault_drill_quiet: SKIP: not a UCX build" >&2; exit 77; }

# Twice: the shipped 4 KiB replies, and 64 KiB (a rendezvous reply). At 16 and
# 64 KiB the client once kept a reply buffer for every reply of the stream
# (320 MB at 16 KiB) and sent no heartbeat for its first 500 ms: live peers
# were declared lost and the drill failed (p50 22-60 ms against 15 us).
for size in 4KiB 64KiB; do
  rc=0
  timeout --kill-after=10 120 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --np 4 --bin "$FABSCOPE_BIN" -- \
    run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/fault-drill.yaml" --output "$scratch/drill-$size.h5" --no-progress \
    --no-verdict --set "sizes=[$size]" > "$scratch/log" 2>&1 || rc=$?
  # UCX's warnings at the end do not depend on how busy the machine was: checked first.
  mpool=$(grep -c "not returned to mpool" "$scratch/log" || true)
  warnings=$(grep -c "UCX  WARN" "$scratch/log" || true)
  if [ "$mpool" != 0 ] || [ "$warnings" != 0 ]; then
    grep "UCX  WARN" "$scratch/log" | sed 's/0x[0-9a-f]*//g; s/^.*UCX  WARN  //' | sort | uniq -c | sort -rn | head
    echo "FAIL: $size: $warnings UCX warning(s) at the end of the drill, $mpool of them 'not returned to mpool'"
    exit 1
  fi
  # The drill's own judgement (heartbeats within their deadline) needs CPUs: on a busy
  # machine live peers are declared lost and the drill rightly says it cannot judge.
  if [ $rc != 0 ]; then
    tail -30 "$scratch/log"
    cannot_tell_if_busy "the $size drill's end is right" "$scratch/drill-$size.h5"
    echo "FAIL: the $size drill exited $rc"; exit 1
  fi
  grep -q "^fabscope: result: exit code 0 (after a fault drill" "$scratch/log" || { tail -30 "$scratch/log"; echo "FAIL: $size: no result line"; exit 1; }
  echo "fault_drill_quiet: $size: the drill passed and UCX said nothing at its end: ok"
done
