// Fault drill over NCCL (transport: nccl, memory: cuda): every drill rank
// runs all-reduce steps of the test's size over a non-blocking communicator of
// its own, `requests` of them at `rate`, one in flight. At `at` the victim
// SIGKILLs itself (kill) or stops launching and polling while staying alive
// (hang). Each survivor declares it lost on NCCL's asynchronous error, a CUDA
// error or its own step deadline (AbortDrillWatch), aborts the communicator
// (ncclCommAbort on a helper thread, bounded by abort_within) and reports.
// Nothing is re-routed: an NCCL communicator has fixed members. The runner
// hands this kind the control plane for the instance (InstancePlan::ownDataPath),
// so no run-wide NCCL communicator that includes the victim is ever opened.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "fabscope/BuildConfig.hpp"
#include "kinds/fault/AbortDrillWatch.hpp"
#include "kinds/fault/FaultDrillRoles.hpp"

#if FABSCOPE_HAVE_NCCL
#include "cuda/CudaApi.hpp"
#include "transport/NcclComm.hpp"
#endif

namespace fabscope::suite::fault_drill {

#if FABSCOPE_HAVE_NCCL
namespace {

namespace cu = kernels::cuda;

// One rank's communicator, stream and buffers, set up before the common start.
class NcclDrillRank {
 public:
  NcclDrillRank(RunContext& ctx, const FaultDrillConfig& c, bool victim, EventLog& events);
  ~NcclDrillRank();
  ClientOutcome serve(runtime::Nanoseconds start);

 private:
  ncclResult_t launchStep();
  void teardown();
  AbortDrillPoll look(const char*& launchError) const;
  void abortNow(AbortDrillWatch& watch);
  void hangUntilLeaving(runtime::Nanoseconds leaveAt);
  bool drained(const runtime::Deadline& deadline) const;
  output::Attributes streamAttributes(const AbortDrillWatch& watch, runtime::Nanoseconds start,
                                      runtime::Nanoseconds faultAt) const;

  RunContext& ctx_;
  const FaultDrillConfig& c_;
  const bool victim_;
  EventLog& events_;
  const int victimRank_;
  const std::size_t count_;  // floats per all-reduce
  int device_ = 0;
  std::unique_ptr<transport::NcclComm> comm_;
  std::unique_ptr<cu::Stream> stream_;
  std::unique_ptr<cu::DeviceBuffer> send_, recv_;
  std::vector<runtime::Nanoseconds> completions_;
};

NcclDrillRank::NcclDrillRank(RunContext& ctx, const FaultDrillConfig& c, bool victim, EventLog& events)
    : ctx_(ctx),
      c_(c),
      victim_(victim),
      events_(events),
      victimRank_(ctx.participants[static_cast<std::size_t>(c.victim)]),
      count_(static_cast<std::size_t>(c.replyBytes) / sizeof(float)) {
  const int devices = cu::deviceCount();
  if (devices == 0) throw RuntimeFailure("a fault drill over NCCL needs a GPU on every drill rank; this host has none");
  device_ = ctx.identity.localRank % devices;
  cu::setDevice(device_);
  stream_ = std::make_unique<cu::Stream>();
  send_ = std::make_unique<cu::DeviceBuffer>(count_ * sizeof(float));
  recv_ = std::make_unique<cu::DeviceBuffer>(count_ * sizeof(float));
  cu::memsetAsync(send_->data(), 0, count_ * sizeof(float), *stream_);
  comm_ = std::make_unique<transport::NcclComm>(ctx.group, device_, ctx.deadline, transport::NcclComm::NonBlocking{});
  completions_.reserve(static_cast<std::size_t>(c.requests));
  // One all-reduce of the test's size with every rank alive, so that NCCL's
  // lazy connection set-up is done before the timed steps.
  try {
    const auto rc = launchStep();
    if (rc != ncclSuccess && rc != ncclInProgress) transport::checkNccl(rc, "the drill's first ncclAllReduce");
    const char* launchError = nullptr;
    runtime::waitUntil(
        [&] {
          const auto seen = look(launchError);
          if (seen.ncclError || seen.cudaError)
            throw RuntimeFailure(std::string("the drill's first NCCL all-reduce: ") +
                                 (seen.ncclError ? seen.ncclError : seen.cudaError));
          return seen.stepDone;
        },
        ctx.deadline, "the fault drill's first NCCL all-reduce with every rank (connection set-up)");
  } catch (...) {
    teardown();
    throw;
  }
}

NcclDrillRank::~NcclDrillRank() { teardown(); }

// The communicator is aborted, never destroyed (ncclCommDestroy would wait
// for a peer that may be gone). Device memory is freed only when nothing on
// the stream can touch it any more: cudaFree waits for the device, and a
// kernel still waiting on the lost peer would make it wait for ever; otherwise
// it stays allocated, unused, until the process ends.
void NcclDrillRank::teardown() {
  if (comm_) (void)comm_->abortBy(device_, runtime::Deadline::afterSeconds(c_.abortWithinSeconds));
  if (stream_ && !drained(runtime::Deadline::afterSeconds(1))) {
    (void)send_.release();
    (void)recv_.release();
    (void)stream_.release();
  }
}

// Nothing left on the stream; false past `deadline` or when the stream reports an error.
bool NcclDrillRank::drained(const runtime::Deadline& deadline) const {
  for (;;) {
    const auto state = cudaStreamQuery(stream_->get());
    if (state == cudaSuccess) return true;
    if (state != cudaErrorNotReady || deadline.expired()) return false;
  }
}

// Enqueues one all-reduce (ncclInProgress: NCCL is still enqueuing it).
ncclResult_t NcclDrillRank::launchStep() {
  return ncclAllReduce(send_->data(), recv_->data(), count_, ncclFloat, ncclSum, comm_->get(), stream_->get());
}

// What the step in flight shows now. The stream is asked only once NCCL has
// finished enqueuing (no ncclInProgress): before that it may look idle.
AbortDrillPoll NcclDrillRank::look(const char*& launchError) const {
  AbortDrillPoll seen;
  if (launchError) {
    seen.ncclError = std::exchange(launchError, nullptr);
    return seen;
  }
  const auto state = comm_->asyncState();
  if (state == ncclInProgress) return seen;
  if (state != ncclSuccess) {
    seen.ncclError = ncclGetErrorString(state);
    return seen;
  }
  const auto query = cudaStreamQuery(stream_->get());
  if (query == cudaSuccess)
    seen.stepDone = true;
  else if (query != cudaErrorNotReady)
    seen.cudaError = cudaGetErrorString(query);
  return seen;
}

// ncclCommAbort, bounded by abort_within from the detection.
void NcclDrillRank::abortNow(AbortDrillWatch& watch) {
  const bool returned = comm_->abortBy(device_, runtime::Deadline(watch.abortDeadline()));
  const auto now = runtime::monotonicNow();
  if (returned) {
    watch.abortReturned(now);
    events_.add(ctx_, now, "aborted", victimRank_,
                "ncclCommAbort returned " + milliseconds(static_cast<double>(watch.abortTook()) / 1e6) +
                    " ms after the detection");
  } else {
    watch.abortGivenUp(now);
    events_.add(ctx_, now, "abort_stuck", victimRank_,
                "ncclCommAbort had not returned " + milliseconds(c_.abortWithinSeconds * 1e3) +
                    " ms (abort_within) after the detection; its thread is left behind");
  }
}

// The victim of a hang: alive and silent, launching and polling nothing,
// until it leaves the run; then its own communicator goes, bounded.
void NcclDrillRank::hangUntilLeaving(runtime::Nanoseconds leaveAt) {
  while (runtime::monotonicNow() < leaveAt) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  teardown();
}

output::Attributes NcclDrillRank::streamAttributes(const AbortDrillWatch& watch, runtime::Nanoseconds start,
                                                   runtime::Nanoseconds faultAt) const {
  // Steps completed before the fault, per second of the stream before it.
  const auto before = std::count_if(completions_.begin(), completions_.end(), [&](auto t) { return t < faultAt; });
  const double preFaultPerSecond =
      faultAt > start ? static_cast<double>(before) * 1e9 / static_cast<double>(faultAt - start) : 0;
  return {
      {"fault", c_.fault},
      {"victim_rank", std::int64_t{victimRank_}},
      {"victim_host", ctx_.identity.hostOfRank.at(static_cast<std::size_t>(victimRank_))},
      {"spare_rank", std::int64_t{-1}},
      {"fault_ns", ctx_.clock.toGlobal(faultAt)},
      {"detect_within_ms", c_.detectWithinSeconds * 1e3},
      {"heartbeat_ms", 0.0},
      {"heartbeat_deadline_ms", 0.0},
      {"request_timeout_ms", c_.requestTimeoutSeconds * 1e3},
      {"requests", std::int64_t{c_.requests}},
      {"completed", watch.completedSteps()},
      {"rerouted", std::int64_t{0}},
      {"reposted", std::int64_t{0}},
      {"failed_requests", c_.requests - watch.completedSteps()},
      {"pre_fault_rps", preFaultPerSecond},
      {"recovered_ms", -1.0},
      {"transport_detection", transportDetection(ctx_.instance.spec->transport)},
      {"reroute",
       std::string("none over NCCL: a communicator has fixed members, so the survivors abort theirs and nothing "
                   "takes the victim's share")},
      {"abort_within_ms", c_.abortWithinSeconds * 1e3},
  };
}

ClientOutcome NcclDrillRank::serve(runtime::Nanoseconds start) {
  ClientOutcome out;
  const auto faultAt = start + static_cast<runtime::Nanoseconds>(c_.atSeconds * 1e9);
  const auto leaveAt = start + static_cast<runtime::Nanoseconds>(c_.victimLeavesAfterSeconds() * 1e9);
  out.faultAt = faultAt;
  if (ctx_.group.rank() == 0)
    events_.add(ctx_, faultAt, "fault", victimRank_,
                c_.fault + (c_.fault == "kill" ? " (SIGKILL)" : " (stops launching and polling)") + " planned at +" +
                    milliseconds(c_.atSeconds * 1e3) + " ms by the victim's own clock");
  AbortDrillWatch watch(abortDrillTiming(c_, start));
  const int me = ctx_.world.rank();
  const auto bytes = static_cast<std::int64_t>(count_ * sizeof(float));
  const char* launchError = nullptr;
  for (bool going = true; going;) {
    const auto now = runtime::monotonicNow();
    if (victim_ && now >= faultAt) {
      if (c_.fault == "kill") kill(getpid(), SIGKILL);  // nothing flushed: the drill is about the survivors
      hangUntilLeaving(leaveAt);
      return out;
    }
    switch (watch.poll(now, look(launchError))) {
      case AbortDrillAction::launch: {
        const auto rc = launchStep();
        if (rc != ncclSuccess && rc != ncclInProgress) launchError = ncclGetErrorString(rc);
        watch.launched(now);
        break;
      }
      case AbortDrillAction::stepCompleted: {
        const auto& step = watch.lastStep();
        completions_.push_back(step.doneAt);
        ctx_.samples.record(me, static_cast<std::int32_t>(step.index), -1, bytes, step.launchedAt, step.doneAt);
        break;
      }
      case AbortDrillAction::abort:
        events_.add(ctx_, *watch.detectedAt(), "detected", victimRank_, watch.detectionPath());
        abortNow(watch);
        going = false;
        break;
      case AbortDrillAction::finished:
        going = false;
        break;
      case AbortDrillAction::wait:
        if (ctx_.deadline.expiredAt(now)) ctx_.deadline.fail("the fault drill's NCCL all-reduce steps");
        break;
    }
  }
  // A kernel the abort ended leaves the stream; until then the buffers stay (see the destructor).
  if (watch.phase() == AbortDrillPhase::aborted) (void)drained(runtime::Deadline(watch.abortDeadline()));
  if (watch.detectedAt()) out.detection = {watch.detectedAt(), watch.detectionPath(), watch.abortTook()};
  if (ctx_.group.rank() == 0) {
    out.attributes = streamAttributes(watch, start, faultAt);
    addExpectedDetection(out.attributes, c_, ctx_.instance.spec->transport);
  }
  return out;
}

}  // namespace

std::function<ClientOutcome(runtime::Nanoseconds)> prepareAbortDrill(RunContext& ctx, const FaultDrillConfig& c,
                                                                     bool victim, EventLog& events) {
  auto rank = std::make_shared<NcclDrillRank>(ctx, c, victim, events);
  return [rank](runtime::Nanoseconds start) { return rank->serve(start); };
}

#else

std::function<ClientOutcome(runtime::Nanoseconds)> prepareAbortDrill(RunContext&, const FaultDrillConfig&, bool,
                                                                     EventLog&) {
  throw RuntimeFailure(
      "this build has no NCCL: a fault drill over transport: nccl needs fabscope configured with "
      "CUDA and NCCL (FABSCOPE_ENABLE_CUDA, FABSCOPE_ENABLE_NCCL)");
}

#endif

}  // namespace fabscope::suite::fault_drill
