#pragma once
// Shared shape of the point-to-point kinds: patterns (pairs, all-pairs with a
// parallel or serial pass), the round loop, buffers and the data check. A kind
// supplies only how one pair is measured.
#include "kinds/Kind.hpp"
#include "kinds/p2p/PairPlan.hpp"
#include "memory/HostBuffer.hpp"

namespace fabscope::suite {

struct PairBuffers {
  std::byte* send = nullptr;
  std::byte* recv = nullptr;
  std::size_t recvBytes = 0;
  std::size_t sliceBytes = 0;  // one message
  std::size_t slices = 1;      // distinct receive slices (window messages land apart)
};

// The keys of a point-to-point test, read once at load.
struct PointToPointConfig final : scenario::KindConfig {
  Pattern pattern =
      Pattern::pairs;             // pattern: pairs | all-pairs | rails | cross-rail | ring | bisection | hierarchical
  PatternOptions patternOptions;  // sampling: {draws, seed}, hierarchical: {group}
  bool serial = false;            // all_pairs.mode: parallel | serial
  int retestWorst = 3;            // all_pairs.retest_worst
  int window = 1;                 // windowed kinds only
  // receive_buffers (windowed kinds): distinct (every message of a window in a
  // slice of its own, up to 64 MiB, as real transfers land) or one (every
  // message into the same buffer, as osu_bw and ucx_perftest do: to compare with them).
  bool oneReceiveBuffer = false;
  bool corruptForTest = false;
};

class PointToPointKind : public Kind {
 public:
  scenario::KindRules rules() const override;
  InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const override;
  InstancePlan planOn(const scenario::TestInstance& instance, const WorldLayout& world) const override;
  Outcome run(RunContext& ctx) const override;

 protected:
  virtual Metric metric() const = 0;
  virtual int sampleDivisor() const { return 1; }
  virtual bool usesWindow() const { return false; }
  virtual bool oneWay() const { return false; }  // all-pairs measures both directions
  // Measures `iterations` samples (after `warmup`) between this rank and its peer.
  virtual void measurePair(RunContext& ctx, const RankPair& pair, PairBuffers& buffers) const = 0;

  // Default window for windowed kinds.
  static constexpr int defaultWindow = 64;
};

// Scenario check shared by the kinds that move a test buffer over a transport:
// the memory kind must be one the transport (and the build) can address.
void checkMemoryAndTransport(const scenario::TestSpec& spec);
// Test key corrupt_for_test: true (for fabscope's own tests): every sender
// flips one byte of its message after filling it, so the receivers' data check
// must fail and the run exit 1. An explicit scenario key, never an environment
// variable, so a production run cannot trip it by accident.
inline constexpr const char* corruptForTestKey = "corrupt_for_test";

inline constexpr int dataTag = 11;
inline constexpr int ackTag = 12;

}  // namespace fabscope::suite
