#pragma once
// The scenario keys of the `kvpush` test kind, read and checked once, and what
// follows from them (KV layout per rank, bytes and messages per request).
//
// Instance design: one scenario test = one strategy; one instance = that
// strategy x one prompt length. The loader makes one instance per size, so a
// kvpush test gives its prompt lengths as derived sizes,
//   sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [2048, 8192]}
// and each instance's bytes are the KV bytes per rank of one request. (Literal
// sizes with the test's own `prompt_tokens` also work; they must then equal
// the derived values, and the error message prints them.)
#include <cstdint>
#include <string>
#include <vector>

#include "kv/KvBlockLayout.hpp"
#include "model/ModelSpec.hpp"
#include "scenario/Scenario.hpp"

namespace fabscope::suite::kvpush {

enum class Strategy { perBlock, staged, layerStream };
enum class LoopMode { closed, open };
// How a request's KV crosses: `push` = two-sided send/receive; `push-put` =
// the prefill rank writes into blocks the decode rank granted (one-sided put,
// flush, then a small notification); `pull` = the decode rank reads from the
// prefill rank's blocks (one-sided get) once told where they are.
enum class Direction { push, pushPut, pull };
// Which measuring ranks take the roles. `fixed`: ranks [0, P) prefill and
// [P, P + D) decode for every request. `ring`: the requests run in rounds; in
// round r the role block starts r x P measuring ranks further on (modulo the
// N measuring ranks), N / gcd(N, P) rounds a cycle. With P dividing N (one
// node's ranks per worker) every rank prefills once a cycle and decodes D / P
// times: every node that would serve pushes and receives KV, each round's pair
// of nodes in the request rows (prefill_rank, decode_rank). `rotation_cycles`
// runs that many cycles, each with the decode block one more block away
// (KvPushSchedule.hpp): a node's roles spread over the run, so a burst of other
// work on the CPUs does not pass for one node's fault, and each side of a node
// meets several partners, so a slow pair is told from a slow node.
enum class RoleRotation { fixed, ring };

const char* strategyName(Strategy s);
const char* directionName(Direction d);
const char* rotationName(RoleRotation r);
inline bool isOneSided(Direction d) { return d != Direction::push; }

struct KvPushConfig final : scenario::KindConfig {
  model::ModelSpec model;
  model::ParallelLayout parallel;
  std::uint32_t blockTokens = 16;
  std::vector<std::int64_t> promptTokens;
  Strategy strategy = Strategy::perBlock;
  Direction direction = Direction::push;
  int prefillRanks = 0;
  int decodeRanks = 0;
  LoopMode loop = LoopMode::closed;
  int inFlight = 1;                   // requests a prefill rank keeps in transfer at once
  double ratePerSecond = 0;           // open loop: Poisson arrivals per prefill rank
  int requests = 0;                   // measured requests per prefill rank
  int warmupRequests = 0;             // per prefill rank, before the measured ones
  double computePerLayerSeconds = 0;  // layer-stream: busy-wait per layer
  std::uint64_t poolBlocks = 0;       // per worker pool; 0 in the file = derived
  RoleRotation rotation = RoleRotation::fixed;
  int measuringRanks = 0;  // the ranks the roles rotate over (ring)
  int rotationCycles = 1;  // times the ring is run (ring)

  int participants() const { return prefillRanks + decodeRanks; }
  int totalRequestsPerPrefill() const { return warmupRequests + requests; }
  // Rounds of the rotation (1 when fixed; the ring's rounds x cycles) and the
  // measured requests each prefill rank sends per round: `requests` spread over
  // the rounds, rounded up.
  int rounds() const;
  int requestsPerRound() const { return (requests + rounds() - 1) / rounds(); }
};

// Reads and checks every kvpush key of `spec` (the kind's parse step, at
// load). Throws scenario::ScenarioError "file:line:column: message" (model
// errors included).
KvPushConfig readKvPushConfig(const scenario::TestSpec& spec, const scenario::TestSource& source);

// The per-rank layout of the pool (TP shard of one worker) for `poolBlocks`.
kv::KvBlockLayout layoutOf(const KvPushConfig& config, std::uint64_t poolBlocks);
std::uint64_t blocksForTokens(const KvPushConfig& config, std::int64_t tokens);
// KV bytes of one request per rank: whole blocks, every layer and plane.
std::int64_t requestBytesPerRank(const KvPushConfig& config, std::int64_t tokens);
// Messages of one request on the wire (the header message not counted).
std::uint64_t messagesPerRequest(const KvPushConfig& config, std::int64_t tokens);
// Pool blocks a worker needs so that every request in flight has its blocks:
// a prefill rank holds inFlight requests, a decode rank inFlight per prefill rank.
std::uint64_t poolBlocksNeeded(const KvPushConfig& config, std::int64_t tokens);
// The prompt length whose bytes per rank equal `bytes` (the instance size).
std::int64_t promptTokensForBytes(const KvPushConfig& config, std::int64_t bytes);

}  // namespace fabscope::suite::kvpush
