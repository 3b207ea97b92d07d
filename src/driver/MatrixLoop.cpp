// The matrix loop (MatrixLoop.hpp) and the transports it opens.
#include "driver/MatrixLoop.hpp"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <utility>

#include "driver/InstanceAttributes.hpp"
#include "driver/InstanceExecutor.hpp"
#include "driver/Progress.hpp"
#include "stats/Statistics.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::driver {
namespace {

// One transport per name, opened when a test first needs it. After a missed
// deadline transfers may still be in flight inside a transport (UCX can
// cancel neither sends nor puts nor gets, and destroying its worker under
// them crashed): like the buffers they touch, the transports are then left
// alive; the process exits without MPI_Finalize.
class OpenTransports {
 public:
  OpenTransports(const bool& abandoned, std::vector<std::unique_ptr<transport::Transport>>& retired)
      : abandoned_(abandoned), retired_(retired) {}
  OpenTransports(const OpenTransports&) = delete;
  OpenTransports& operator=(const OpenTransports&) = delete;
  ~OpenTransports() {
    if (abandoned_)
      for (auto& entry : open_) (void)entry.second.release();
    for (auto& t : retired_) (void)t.release();
  }
  template <class Open>
  transport::Transport& get(const std::string& name, Open open) {
    auto& transport = open_[name];
    if (!transport) transport = open();
    return *transport;
  }
  // Kept alive, unused: transfers of a missed instance may still be in flight.
  void retire(const std::string& name) {
    retired_.push_back(std::move(open_[name]));
    open_.erase(name);
  }
  void record(output::Recorder& recorder) const {
    for (const auto& [name, t] : open_) {
      output::Attributes facts;
      for (const auto& [key, value] : t->describe()) facts.emplace_back(key, value);
      recorder.transport(name, facts);
    }
  }

 private:
  std::map<std::string, std::unique_ptr<transport::Transport>> open_;
  const bool& abandoned_;
  std::vector<std::unique_ptr<transport::Transport>>& retired_;
};

}  // namespace

bool MatrixLoop::stoppedRunning() const { return run_.survivors || run_.recoveries > maxRecoveries; }

std::string MatrixLoop::whyStopped() const {
  // The cluster that lost a rank is not the one the rest of the matrix was for.
  return run_.survivors ? "skipped: ranks were lost in an earlier fault drill"
                        : "not run: " + std::to_string(run_.recoveries) +
                              " tests missed their deadline, more than the run recovers from (" +
                              std::to_string(maxRecoveries) + ")";
}

void MatrixLoop::skipInstance(int index, const PlannedInstance& planned, const std::string& why) {
  recorder_.skipped(output::instanceGroupPath(index), unfinishedAttributes(index, planned, "skipped", why));
  if (run_.world.rank() != 0) return;
  auto result = coreInstanceResult(index, planned);
  result.status = "skipped";
  result.latency = stats::summarize(std::span<double>{});
  run_.results.push_back(std::move(result));
}

// A kind that moves no data of its own runs over the control plane.
std::string MatrixLoop::transportNameOf(const PlannedInstance& planned) const {
  return run_.registry.kind(planned.instance.spec->kind).usesTransport() && !planned.plan.ownDataPath
             ? planned.instance.spec->transport
             : transport::controlPlaneTransport;
}

int MatrixLoop::run(std::vector<PlannedInstance> planned) {
  const bool rank0 = run_.world.rank() == 0;
  OpenTransports transports(run_.abandoned, run_.retiredTransports);
  // The transports some instance puts or gets over (opened with one-sided operations).
  std::set<std::string> oneSidedTransports;
  for (const auto& p : planned)
    if (p.plan.oneSided) oneSidedTransports.insert(transportNameOf(p));
  Progress progress(static_cast<int>(planned.size()), rank0 && run_.options.progress);
  run_.progress = &progress;
  struct ForgetProgress {
    Progress*& progress;
    ~ForgetProgress() { progress = nullptr; }
  } forgetProgress{run_.progress};
  int exitCode = exit_code::ok;
  // The instance a follow-up slot (a serial retest) follows, and what it chose
  // (nothing when it did not pass: then the slot is recorded as not run). The
  // same on every rank (the choice is rank 0's, broadcast).
  std::optional<PlannedInstance> measured;
  FollowUpChoice followUp;
  for (int index = 0; index < static_cast<int>(planned.size()); ++index) {
    PlannedInstance current = std::move(planned[static_cast<std::size_t>(index)]);
    progress.starting(index,
                      current.instance.caseId + " [" + current.instance.condition + ", " + current.plan.pass + "]");
    if (current.plan.followUpOf >= 0 && !stoppedRunning()) {
      if (!measured || followUp.empty()) {
        skipInstance(index, current, current.plan.part->followUpNotRun(current.plan.followUpOf));
        continue;
      }
      current = followUpOf(*measured, followUp, current.plan.followUpOf);
    }
    measured.reset();
    followUp = {};
    if (stoppedRunning()) {
      if (!run_.survivors) ++run_.notRunAfterTimeouts;
      skipInstance(index, current, whyStopped());
      continue;
    }
    const std::string transportName = transportNameOf(current);
    auto& transport = transports.get(transportName, [&] {
      return transport::openTransport(
          transportName, run_.world, run_.identity.localRank,
          {.settings = &run_.scenario.transports, .oneSided = oneSidedTransports.contains(transportName)},
          setupDeadline(run_.scenario));
    });
    InstanceExecutor instance(run_, losses_, index, current);
    auto result = instance.execute(transport, file_, recorder_);
    if (run_.leaveRun) return exit_code::ok;
    followUp = instance.followUp();
    if (instance.retireDataPath()) {
      // Every rank answered, but transfers of the missed instance may still be
      // in flight (a matched rendezvous can be neither cancelled nor
      // abandoned, and UCX crashed destroying a worker under them): the next
      // instance gets a fresh data path, and the old one is kept, unused.
      ++run_.recoveries;
      transports.retire(transportName);
      run_.runCache.retire();
    }
    if (result.status != "passed" && result.status != "skipped") exitCode = exit_code::checkFailed;
    if (current.plan.part->followedUp()) measured = std::move(current);
    if (rank0) run_.results.push_back(std::move(result));
  }
  transports.record(recorder_);
  return exitCode;
}

}  // namespace fabscope::driver
