#pragma once
// One plug-in per test kind (nccl-tests' model, without its globals): its
// scenario keys, how many samples and bytes an instance needs, and the timed
// run itself, which returns an Outcome; the runner's stages and the recorder
// do the rest. What a new kind touches: docs/architecture.md.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kinds/Roles.hpp"
#include "kinds/RunCache.hpp"
#include "kinds/SampleBuffer.hpp"
#include "kinds/SelfTest.hpp"
#include "memory/BufferArena.hpp"
#include "output/DeclaredAttributes.hpp"
#include "output/KindTable.hpp"
#include "output/Records.hpp"
#include "output/ResultFile.hpp"
#include "runtime/ClockSync.hpp"
#include "runtime/RankIdentity.hpp"
#include "scenario/Matrix.hpp"
#include "topology/TopologySchedule.hpp"
#include "transport/Transport.hpp"

namespace fabscope::suite {

enum class Metric { latency, bandwidth };

struct InstancePlan;

// The part of a plan that its kind family owns (the pair patterns' rounds,
// budget cut and serial retests: kinds/p2p/PairPlan.hpp). Planning and the
// runner reach it only through these hooks; the defaults are a kind with
// nothing of the sort. A part that adds state overrides clone().
class PlanPart {
 public:
  virtual ~PlanPart() = default;
  virtual std::unique_ptr<PlanPart> clone() const { return std::make_unique<PlanPart>(*this); }
  // The rounds the instance runs (`fabscope list`); -1: it has no rounds.
  virtual std::int64_t roundCount() const { return -1; }
  // The rounds the time estimate counts for `rounds` planned ones (a slot
  // whose pairs are chosen later counts what its sample bound allows).
  virtual double estimatedRounds(const InstancePlan&, double rounds, int /*iterations*/) const { return rounds; }
  // The time budget may keep fewer of its rounds: thin() keeps `keep` of
  // roundCount(), a sample drawn from `seed`, and says so after `budget` (the
  // budget's name) in the plan's description and the instance's attributes.
  virtual bool thinnable(const InstancePlan&) const { return false; }
  virtual void thin(InstancePlan&, std::int64_t /*keep*/, std::uint64_t /*seed*/, const std::string& /*budget*/,
                    int /*iterations*/) {}
  // Whether it holds something instances may share (the measuring ranks'
  // layout: every size and condition of a test has the same), and taking
  // over an earlier instance's equal one; true when it did.
  virtual bool sharable() const { return false; }
  virtual bool shareWith(const PlanPart&) { return false; }
  // Its attributes of /tests/NNNN, after the common ones.
  virtual void addAttributes(output::Attributes&) const {}
  // The instance's samples also make /tests/NNNN/pair_matrix.
  virtual bool pairMatrix() const { return false; }
  // Follow-up instances (serial retests): followedUp() says the instance has
  // one, planned as the slot right after it (followUpSlot, planned before
  // anything runs so the count announced at the start holds). Once the
  // instance has passed, rank 0 chooses from its pairs ranked worst first
  // (group indices) what the follow-up measures (empty: nothing); every rank
  // receives the choice and fills the slot with followUp(). A slot left
  // without a choice is recorded as not run, with followUpNotRun().
  virtual bool followedUp() const { return false; }
  virtual void followUpSlot(InstancePlan& /*slot*/, int /*measuredIndex*/, int /*iterations*/) const {}
  virtual std::vector<std::int32_t> chooseFollowUp(
      const std::vector<std::pair<std::int32_t, std::int32_t>>& /*worstFirst*/, std::uint64_t /*seed*/) const {
    return {};
  }
  virtual void followUp(InstancePlan& /*next*/, const std::vector<std::int32_t>& /*choice*/, int /*measuredIndex*/,
                        int /*iterations*/) const {}
  virtual std::string followUpNotRun(int /*measuredIndex*/) const { return "not run"; }
};

// An InstancePlan's PlanPart, copied with the plan (a retest starts as a copy
// of the instance it retests). Without one (a kind that plans none, or a plan
// moved from) it answers as a part with nothing: the defaults above.
class PlanPartHolder {
 public:
  PlanPartHolder() = default;
  PlanPartHolder(const PlanPartHolder& other) : part_(other.part_ ? other.part_->clone() : nullptr) {}
  PlanPartHolder(PlanPartHolder&&) noexcept = default;
  PlanPartHolder& operator=(const PlanPartHolder& other) {
    if (this != &other) part_ = other.part_ ? other.part_->clone() : nullptr;
    return *this;
  }
  PlanPartHolder& operator=(PlanPartHolder&&) noexcept = default;
  void reset(std::unique_ptr<PlanPart> part) { part_ = std::move(part); }
  PlanPart* operator->() const noexcept { return part_ ? part_.get() : &none(); }
  PlanPart& operator*() const noexcept { return *operator->(); }
  // The kind family's own type, or null when the part is another's.
  template <typename Part>
  Part* as() const noexcept {
    return dynamic_cast<Part*>(part_.get());
  }

 private:
  // Stateless: its hooks change nothing, so one serves every plan without a part.
  static PlanPart& none() {
    static PlanPart nothing;
    return nothing;
  }
  std::unique_ptr<PlanPart> part_;
};

// What an instance will do, known before anything is measured: what every
// kind plans, and the part its kind family owns.
struct InstancePlan {
  Metric metric = Metric::latency;
  int sampleDivisor = 1;
  // Labels every instance carries in the file and the summary: the traffic's
  // pattern ("pairs", "incast", "fault" ...), the pass (parallel, serial,
  // serial-retest) and the operations in flight per transfer.
  std::string pattern = "pairs";
  std::string pass = "parallel";
  int window = 1;
  std::int64_t maxSamplesPerRank = 0;
  std::int64_t bufferBytesPerRank = 0;
  std::string description;  // for `fabscope list`
  // >= 0: a follow-up of the instance of this index (a serial retest).
  int followUpOf = -1;
  // > 0: each pair's samples come from one timed loop with this many clock
  // reads per iteration, so the run also reports the loop's batch figure (the
  // way OSU reports: loop time / iterations; driver/BatchFigure.hpp).
  int batchClockReads = 0;
  // The instance may lose ranks on purpose (fault drills): the file is then
  // written gathered to rank 0 so the survivors alone can finish it.
  bool mayLoseRanks = false;
  // The kind opens its own data path for this instance (a fault drill over
  // NCCL: a communicator it aborts): the runner hands it the control plane
  // and opens no transport of the scenario's, which would include the victim.
  bool ownDataPath = false;
  // The instance puts or gets (exposeRegion, postPut, postGet): the transport
  // is opened with one-sided operations. UCX adds lanes for them, and every
  // poll of the worker then progresses one more shared-memory transport, on
  // every wait of every test of the run (about 60 instructions a
  // poll, on the latency path), so only runs that need them ask for them.
  bool oneSided = false;
  // The kind family's part (kinds/p2p/PairPlan.hpp for the pair patterns).
  PlanPartHolder part;
};

// A kind's data checks: the first failure's message is kept (the instance
// then ends `failed`). Filled outside timed loops.
class Verdict {
 public:
  void fail(std::string message) {
    if (!failed_) message_ = std::move(message);
    failed_ = true;
  }
  bool failed() const noexcept { return failed_; }
  const std::string& message() const noexcept { return message_; }

 private:
  bool failed_ = false;
  std::string message_;
};

// What a kind allocates for one instance and transfers may still touch after
// a missed deadline: the runner keeps it alive then, like the arena's buffers.
class InstanceState {
 public:
  virtual ~InstanceState() = default;
  // The kind's tables as far as the instance got, written also when run()
  // threw (a missed deadline part way keeps the rows measured before it).
  virtual std::vector<output::KindTable> tablesSoFar() const { return {}; }
};

// What a kind's run of an instance gives back, beyond its samples (which go
// to RunContext::samples inside the timed loop) and its verdict.
struct Outcome {
  // Kind-specific attributes for /tests/NNNN (rank 0's values are written).
  output::Attributes attributes;
  // The kind's own tables (declared by Kind::tables()); a rank may leave out
  // a table, which is then written with no rows from it. Tables of the
  // kind's InstanceState (tablesSoFar) are added by the runner.
  std::vector<output::KindTable> tables;
  // Set by a kind that lost ranks: the run goes on with these ranks only
  // (every survivor must set it; rank 0 must survive).
  std::optional<runtime::Communicator> survivors;
  // Set on a rank that must take no further part (e.g. the victim of a drill).
  bool leaveRun = false;
  // Why the instance could not run (e.g. an external tool is not installed):
  // it is then `skipped`, with this as its error, unless a rank failed.
  std::string skipped;
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
  Verdict& verdict;      // data checks
  // The kind's state of this instance that transfers may touch (kept after a
  // missed deadline); empty until the kind adopts one.
  std::unique_ptr<InstanceState>& state;
  runtime::Deadline deadline;
  std::uint64_t seed;  // this instance's
  // The same for every condition and replicate of one case (test and size), so
  // random choices that shape the traffic (e.g. MoE routing) match between the
  // quiet and the congested instance they are compared across.
  std::uint64_t caseSeed;
  // --self-test hooks (fabscope's own tests spoil data on purpose); none in a real run.
  const SelfTestHooks& selfTest;

  template <typename State>
  State& adopt(std::unique_ptr<State> s) {
    auto& ref = *s;
    state = std::move(s);
    return ref;
  }
};

// The roles part of a test's scenario entry.
inline RoleSpec roleSpecOf(const scenario::TestSpec& spec) {
  return {spec.ranks, spec.canaries, spec.canaryFraction, spec.placement};
}
// An instance's roles: its test's, with the group of a rotation (roles.groups) that measures in it.
inline RoleSpec roleSpecOf(const scenario::TestInstance& instance) {
  auto roles = roleSpecOf(*instance.spec);
  roles.group = instance.group;
  return roles;
}
inline bool hasCongestedCondition(const scenario::TestSpec& spec) {
  for (const auto& c : spec.conditions)
    if (c != "quiet") return true;
  return false;
}
// How many ranks measure in an instance of `spec` (at least `minimum`); a
// ScenarioError at the test's position when the roles cannot give that many.
inline int measuringRanksOf(const scenario::TestSpec& spec, int worldSize, int minimum) {
  try {
    return canaryCount(roleSpecOf(spec), worldSize, minimum, hasCongestedCondition(spec));
  } catch (const UsageError& e) {
    throw scenario::ScenarioError(spec.at + ": test '" + spec.name + "': " + e.what());
  }
}

class Kind {
 public:
  virtual ~Kind() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line for --help
  // Its keys and checks; rules().parse reads the kind's keys of a test once,
  // at load, into the test's config (scenario::configOf) for plan and run.
  virtual scenario::KindRules rules() const = 0;
  // What an instance will do; from the test's config, no YAML. Throws
  // ScenarioError (at the positions the loader captured in the spec).
  virtual InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const = 0;
  // Checks that need every rank's host (`hostOfRank`, world rank order), made
  // at load before anything runs; throws ScenarioError. Default: none.
  virtual void checkPlacement(const scenario::TestInstance&, const std::vector<std::string>&) const {}
  // The shell commands an instance of `spec` runs on the admin's behalf (a fault
  // drill's fault and restore commands), placeholders filled as far as they are
  // known before the ranks are placed: `fabscope list` shows them. Default: none.
  virtual std::vector<std::string> shellCommands(const scenario::TestSpec&) const { return {}; }
  // The same, knowing where the ranks sit (kinds whose pattern follows the
  // topology); the others plan from the world size alone.
  virtual InstancePlan planOn(const scenario::TestInstance& instance, const WorldLayout& world) const {
    return plan(instance, world.size());
  }
  // False for kinds that bring their own data path (collectives): the runner
  // then hands them the MPI transport and checks the scenario's transport
  // with the kind's own rules.
  virtual bool usesTransport() const { return true; }
  // Runs the timed part on a measuring rank; samples go to ctx.samples (local
  // clock), data-check failures to ctx.verdict; the rest comes back.
  virtual Outcome run(RunContext& ctx) const = 0;
  // The kind's own tables under /tests/NNNN, with no rows: every rank writes
  // each of them (collective), also ranks that did not run the instance.
  virtual std::vector<output::KindTable> tables() const { return {}; }
  // Its own attributes of /tests/NNNN, besides those every instance has: declared
  // here once; src/output/schema.yaml's `instance_attributes: kinds:` entry of the
  // kind is printed from them (tests/unit/test_schema.cpp). Default: none.
  virtual output::DeclaredAttributes declaredAttributes() const { return {}; }
};

}  // namespace fabscope::suite
