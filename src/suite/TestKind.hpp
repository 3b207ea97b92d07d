#pragma once
// One plug-in per test kind (nccl-tests' model, without its globals): its
// scenario keys, how many samples and bytes an instance needs, and the timed
// run itself. Adding a test = one new file + one line in Registry.cpp.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "output/Records.hpp"
#include "output/ResultFile.hpp"
#include "runtime/ClockSync.hpp"
#include "runtime/RankIdentity.hpp"
#include "scenario/Matrix.hpp"
#include "suite/PairSchedule.hpp"
#include "suite/Roles.hpp"
#include "suite/BufferArena.hpp"
#include "suite/RunCache.hpp"
#include "suite/SampleBuffer.hpp"
#include "transport/Transport.hpp"

namespace fabscope::suite {

enum class Metric { latency, bandwidth };

// What an instance will do, known before anything is measured.
struct InstancePlan {
  Metric metric = Metric::latency;
  int sampleDivisor = 1;
  std::string pattern = "pairs";
  std::string pass = "parallel";
  int window = 1;
  Schedule schedule;               // empty for collectives
  std::int64_t maxSamplesPerRank = 0;
  std::int64_t bufferBytesPerRank = 0;
  std::string description;         // for `fabscope list`
  int retestWorst = 0;             // all-pairs: serially re-measure this many worst pairs
  int retestOf = -1;
  // A serial retest's control pairs (group indices; also in `schedule`): their
  // samples carry sample_flags::controlPair.
  std::vector<RankPair> controlPairs;
  // The instance may lose ranks on purpose (fault drills): the file is then
  // written gathered to rank 0 so the survivors alone can finish it.
  bool mayLoseRanks = false;
};

struct RunContext {
  // All ranks of the run; transports address peers by their rank here.
  const runtime::Communicator& world;
  // The measuring ranks (canaries) of this instance, in role order; group
  // index i is world rank participants[i]. Barriers between rounds use it.
  const runtime::Communicator& group;
  const std::vector<int>& participants;
  transport::Transport& transport;
  const runtime::RankIdentity& identity;
  const runtime::ClockSync& clock;
  const scenario::TestInstance& instance;
  const InstancePlan& plan;
  SampleBuffer& samples;
  BufferArena& buffers;  // every buffer a transfer touches comes from here
  RunCache& runCache;    // what a kind keeps across its instances of this run
  runtime::Deadline deadline;
  std::uint64_t seed;
  bool dataCheckFailed = false;
  std::string dataCheckMessage;
  // Kind-specific attributes for /tests/NNNN (rank 0's values are written).
  output::Attributes attributes;
  // Set by a kind that lost ranks: the run goes on with these ranks only
  // (every survivor must set it; rank 0 must survive).
  std::optional<runtime::Communicator> survivors;
  // Set on a rank that must take no further part (e.g. the victim of a drill).
  bool leaveRun = false;
  // The kind's own state of this instance, from run() to writeExtra() (e.g.
  // rows of an extra table); empty on ranks that did not run it.
  std::shared_ptr<void> kindState;
};

// The roles part of a test's scenario entry.
inline RoleSpec roleSpecOf(const scenario::TestSpec& spec) {
  return {spec.ranks, spec.canaries, spec.canaryFraction, spec.placement};
}
inline bool hasCongestedCondition(const scenario::TestSpec& spec) {
  for (const auto& c : spec.conditions)
    if (c != "quiet") return true;
  return false;
}

class TestKind {
 public:
  virtual ~TestKind() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line for --help
  virtual scenario::KindRules rules() const = 0;
  virtual InstancePlan plan(const scenario::TestInstance& instance, const std::string& scenarioFile,
                            int worldSize) const = 0;
  // False for kinds that bring their own data path (collectives): the runner
  // then hands them the MPI transport and checks the scenario's transport
  // with the kind's own rules.
  virtual bool usesTransport() const { return true; }
  // Runs the timed part on every rank; samples go to ctx.samples (local clock).
  virtual void run(RunContext& ctx) const = 0;
  // Writes kind-specific tables under `group` (collective over the run's
  // communicator, after the samples). Default: nothing.
  virtual void writeExtra(RunContext& ctx, output::ResultFile& file, const std::string& group,
                          const runtime::Deadline& deadline) const {
    (void)ctx, (void)file, (void)group, (void)deadline;
  }
};

}  // namespace fabscope::suite
