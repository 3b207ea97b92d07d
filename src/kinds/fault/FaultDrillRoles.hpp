#pragma once
// The two sides of a fault drill (kind `fault`, see FaultDrillKind.cpp): the
// client's request stream with detection and re-routing, and the workers
// (the victim among them), plus what they share: message layout, tags and the
// rank's timeline of events.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kinds/Kind.hpp"
#include "kinds/fault/FaultDrillConfig.hpp"
#include "kinds/fault/FaultEventRecords.hpp"
#include "output/Records.hpp"

namespace fabscope::suite::fault_drill {

constexpr int requestTag = 41;
// A worker's answer to the stop. The client waits for it, progressing its
// transport: a live worker it declared lost may still be sending a reply the
// client no longer wants (a rendezvous send completes only while the receiver
// progresses), and it reads the stop only after that send.
constexpr int stopAckTag = 42;
constexpr int replyTagBase = 1 << 20;  // + request id; requests <= 1e6 keeps it under 2^21

struct RequestMessage {
  std::int32_t id;
  std::int32_t stop;  // 1: no more requests, the worker leaves its loop
};

// Clears the transport's error handler when the drill ends: it captures locals.
struct ErrorHandlerGuard {
  transport::Transport& transport;
  ~ErrorHandlerGuard() { transport.onError(nullptr); }
};

// When this survivor records a loss of `peer` it noticed at `at`: `at`, or, with
// --self-test detect-late=R:MS on rank R for the victim, MS later, as a detector
// that slow would record it (so a test can show a late detection fails the drill).
inline runtime::Nanoseconds recordedDetection(const RunContext& ctx, int peer, int victimRank,
                                              runtime::Nanoseconds at) {
  if (peer != victimRank || ctx.selfTest.lateDetectionRank != ctx.world.rank()) return at;
  return at + static_cast<runtime::Nanoseconds>(ctx.selfTest.lateDetectionMs * 1e6);
}

// How a survivor learned of the victim's loss.
struct Detection {
  std::optional<runtime::Nanoseconds> at;  // monotonic
  std::string path;
  // A drill over NCCL: detection -> ncclCommAbort returned (ns); -1 when it
  // did not return within abort_within, or nothing was detected.
  runtime::Nanoseconds abortTook = -1;
};

// One fault of the drill (a flap has `repeat` of them): when it began, was
// noticed, ended, when the victim was back in service and back at baseline.
struct FaultCycle {
  runtime::Nanoseconds faultAt = 0;  // monotonic: fault_command started, or planned
  std::optional<runtime::Nanoseconds> detectedAt, restoredAt, rejoinedAt, baselineAt;
  double throughputPerSecond = 0, p99Ns = 0;  // of the baseline window (or the best one seen)
};

// What the client knows after its loop.
struct ClientOutcome {
  runtime::Nanoseconds faultAt = 0;  // monotonic: planned (kill, hang) or fault_command started
  Detection detection;
  output::Attributes attributes;
  std::string verdict;  // empty when the stream itself passed
  std::int64_t hung = 0;
  std::vector<FaultCycle> cycles;  // faults that end (FaultDrillConfig::faultEnds)
};

// This rank's rows of /tests/NNNN/events (global clock).
class EventLog final : public InstanceState {
 public:
  void add(const RunContext& ctx, runtime::Nanoseconds monotonic, const char* kind, int peer,
           const std::string& detail) {
    EventRecord row{};
    row.rank = ctx.world.rank();
    row.t_ns = ctx.clock.toGlobal(monotonic);
    output::setText(row.kind, kind);
    row.peer = peer;
    output::setText(row.detail, detail);
    rows.push_back(row);
  }
  std::vector<EventRecord> rows;
  // The timeline as far as the drill got, also after a failure part way.
  std::vector<output::KindTable> tablesSoFar() const override { return {output::KindTable::of("events", rows)}; }
};

inline std::string milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", ms);
  return text;
}

inline std::vector<int> othersThan(const std::vector<int>& ranks, int me) {
  std::vector<int> out;
  for (int r : ranks)
    if (r != me) out.push_back(r);
  return out;
}

// A worker (group index 1 .. n-1; the victim acts out the fault) until the
// client's stop, or, for a victim that stays alive, until it leaves.
Detection serveWorker(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, bool victim,
                      EventLog& events);
// The client (group index 0): request stream, fault command, detection,
// re-routing, stop, restore command, and the attributes of the stream.
ClientOutcome serveClient(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, EventLog& events);

// A drill over a communicator the survivors abort (NCCL, FaultDrillNccl.cpp):
// sets up this rank's communicator, GPU buffers and the first all-reduce
// (collective, under ctx.deadline) and returns the drill itself, to run from
// the common start: all-reduce steps until the fault, then (survivors)
// detection and abort. Every rank gets its detection; group index 0 also the
// stream's attributes and verdict. Throws RuntimeFailure in a build without NCCL.
std::function<ClientOutcome(runtime::Nanoseconds start)> prepareAbortDrill(RunContext& ctx, const FaultDrillConfig& c,
                                                                           bool victim, EventLog& events);

// The attributes every drill records about the stack it ran on: what the
// transport can report of a lost peer, and what the stack would take on its
// own to report this fault (ExpectedDetection).
std::string transportDetection(const std::string& transport);
void addExpectedDetection(output::Attributes& attributes, const FaultDrillConfig& c, const std::string& transport);

}  // namespace fabscope::suite::fault_drill
