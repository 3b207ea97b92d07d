#pragma once
// Hooks for fabscope's own tests: `fabscope run --self-test HOOK` (repeatable),
// parsed once from the command line into the run's options and handed to the
// kinds through RunContext::selfTest. Each spoils data on purpose, so a test
// can show that a data check catches it, or forces a code path the test
// machine would not take otherwise. Only an explicit option sets them (never a
// scenario or the environment), so a real run cannot trip one by accident;
// the run's command_line attribute records them.
#include <string>
#include <vector>

namespace fabscope::suite {

struct SelfTestHooks {
  // corrupt-rank=N: all-reduce and all-to-all spoil world rank N's received
  // data after the timed loop (tests/mpi/allreduce.sh, alltoall.sh); the mix
  // spoils its TP all-reduce result, its all-to-all and its first KV push
  // received there (tests/mpi/mix.sh).
  int corruptRank = -1;
  // corrupt-sender=N: in latency, bandwidth, bibw and incast, world rank N alone
  // flips one byte of the message it sends (as the test key corrupt_for_test
  // makes every sender do), so a test can show that the receivers check every
  // pair's data, not only the first one's (tests/mpi/data_check.sh sweeps N).
  int corruptSender = -1;
  // kv-corrupt: kvpush's prefill rank 0 flips one byte of its first measured
  // request (tests/mpi/kv_push.sh, kv_one_sided.sh, kv_gpu.sh); kv-corrupt=P:K:
  // prefill rank P (its index among the prefill ranks) of its request K, counting
  // its warm-up requests from 0, so a test can spoil any one request, warm-up
  // or measured, of any prefill rank (tests/mpi/kv_push.sh sweeps them).
  bool kvCorrupt = false;
  int kvCorruptPrefill = 0;
  int kvCorruptRequest = -1;  // -1: the first measured request
  // kv-in-order: kvpush posts as a transport that matches in posting order
  // (NCCL) needs, over a tag-matching one (tests/mpi/kv_push.sh).
  bool kvInOrder = false;
  // api-corrupt-request: each api client (the api kind's, the mix's front end)
  // flips one body byte of its first measured request; the server must refuse
  // it (tests/mpi/api.sh, mix.sh). api-corrupt-request=C:K: client C alone (its
  // index among the clients) of its request K, warm-up requests counted from 0,
  // so a test can spoil any one request, warm-up or measured (api.sh sweeps them).
  bool apiCorruptRequest = false;
  int apiCorruptRequestClient = -1;  // -1: every client
  int apiCorruptRequestIndex = -1;   // -1: the first measured request
  // api-corrupt-chunk: each api server flips one payload byte of the first
  // chunk of its first answer to a measured request; the client must find it.
  // api-corrupt-chunk=K:J: of chunk J of its first answer to a request K
  // (warm-up requests counted from 0).
  bool apiCorruptChunk = false;
  int apiCorruptChunkRequest = -1;  // -1: the first measured request
  int apiCorruptChunkIndex = 0;
  // detect-late=R:MS: in a fault drill, survivor world rank R records its
  // detection of the victim MS milliseconds after it made it, as a detector that
  // slow would (tests/mpi/fault_late.sh): the drill must judge it late.
  int lateDetectionRank = -1;
  double lateDetectionMs = 0;
  // stop=R:after-test: world rank R stops itself (SIGSTOP) once a test's ranks
  // agreed on its status, before its samples are gathered; stop=R:closing:
  // before the run's closing steps; stop=R:header: once the result file is
  // open, before its header is written (tests/mpi/stopped_after_test.sh). A
  // peer stopped at a moment no outside signal can hit reliably: the survivors
  // must name it within control_grace and end the run.
  enum class StopPoint { none, header, afterTest, closing };
  int stopRank = -1;
  StopPoint stopAt = StopPoint::none;
};

// Stops this process (SIGSTOP) when the hooks ask rank `rank` to stop at `point`.
void stopIfAsked(const SelfTestHooks& hooks, int rank, SelfTestHooks::StopPoint point);

// The hooks of the --self-test values; throws UsageError naming a value it
// does not know, with the known ones.
SelfTestHooks parseSelfTestHooks(const std::vector<std::string>& values);

// One line per hook, for `fabscope run --help`.
inline constexpr const char* selfTestHelp =
    "a hook for fabscope's own tests, repeatable: corrupt-rank=N (allreduce, alltoall, mix: world rank N's "
    "received data is spoiled after the timed loop), corrupt-sender=N (latency, bandwidth, bibw, incast: world "
    "rank N alone spoils the message it sends), kv-corrupt (kvpush: prefill rank 0 spoils its first request), "
    "kv-corrupt=P:K (prefill rank P spoils its request K, warm-up requests counted from 0), "
    "kv-in-order (kvpush posts as for an in-order transport such as NCCL), api-corrupt-request (each api client "
    "spoils its first measured request), api-corrupt-request=C:K (api client C spoils its request K, warm-up "
    "requests counted from 0), api-corrupt-chunk (each api server spoils the first chunk of its first measured "
    "answer), api-corrupt-chunk=K:J (each api server spoils chunk J of its first answer to a request K), "
    "detect-late=R:MS (fault drill: survivor rank R records its detection MS ms late), stop=R:after-test (rank R "
    "stops itself, SIGSTOP, once a test's status is agreed, before its samples are gathered), stop=R:closing "
    "(rank R stops itself before the run's closing steps). "
    "Each must make its check fail or take its code path; never for a real measurement";

}  // namespace fabscope::suite
