#include "kinds/kvpush/KvPushConfig.hpp"

#include <algorithm>
#include <stdexcept>

#include "kinds/Kind.hpp"
#include "kinds/kvpush/KvPushSchedule.hpp"
#include "model/ModelSpecYaml.hpp"
#include "scenario/TestSource.hpp"
#include "scenario/Units.hpp"

namespace fabscope::suite::kvpush {
namespace {

using scenario::ScenarioError;

[[noreturn]] void failAt(const std::string& file, const YAML::Node& node, const std::string& message) {
  throw ScenarioError(scenario::positionOf(file, node) + ": " + message);
}

std::string joinedSizes(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<std::int64_t> readTokenList(const YAML::Node& n, const std::string& file, const std::string& test) {
  std::vector<std::int64_t> out;
  auto one = [&](const YAML::Node& item) {
    std::int64_t v = 0;
    if (!item.IsScalar() || !YAML::convert<std::int64_t>::decode(item, v) || v < 1 || v > (1 << 24))
      failAt(file, item, "'prompt_tokens' in test '" + test + "' must list whole token counts 1..16777216");
    if (std::find(out.begin(), out.end(), v) != out.end())
      failAt(file, item, "prompt length " + std::to_string(v) + " is listed twice in 'prompt_tokens'");
    out.push_back(v);
  };
  if (n.IsSequence()) {
    if (n.size() == 0) failAt(file, n, "'prompt_tokens' is empty; give at least one prompt length");
    for (const auto& item : n) one(item);
  } else {
    one(n);
  }
  return out;
}

double readPositiveNumber(const YAML::Node& n, const std::string& file, const std::string& what) {
  double v = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !(v > 0))
    failAt(file, n, "'" + what + "' must be a number above 0");
  return v;
}

}  // namespace

const char* strategyName(Strategy s) {
  switch (s) {
    case Strategy::perBlock:
      return "per-block";
    case Strategy::staged:
      return "staged";
    case Strategy::layerStream:
      return "layer-stream";
  }
  return "?";
}

const char* directionName(Direction d) {
  switch (d) {
    case Direction::push:
      return "push";
    case Direction::pushPut:
      return "push-put";
    case Direction::pull:
      return "pull";
  }
  return "?";
}

const char* rotationName(RoleRotation r) { return r == RoleRotation::ring ? "ring" : "fixed"; }

int KvPushConfig::rounds() const {
  return rotation == RoleRotation::ring ? ringRoundsOf(prefillRanks, measuringRanks) * rotationCycles : 1;
}

namespace {

// Reads a kvpush test's keys in a fixed order, so that the first problem
// reported is always the same one.
struct KvPushReader {
  const scenario::TestSpec& spec;
  const scenario::TestSource& source;
  scenario::ParamReader p;
  const std::string& file;
  const YAML::Node& node;
  // Where the prompt lengths, the model and the split were given (copied,
  // never assigned: assigning a YAML::Node writes into the tree it refers to).
  const YAML::Node sizes;
  const bool derived;
  const YAML::Node modelNode, parallelNode;
  KvPushConfig c;

  KvPushReader(const scenario::TestSpec& spec, const scenario::TestSource& source)
      : spec(spec),
        source(source),
        p(spec, source),
        file(source.file),
        node(source.test),
        sizes(node["sizes"]),
        derived(sizes && sizes.IsMap()),
        modelNode(derived && sizes["model"] ? sizes["model"]
                  : node["model"]           ? node["model"]
                                            : source.model),
        parallelNode(derived && sizes["parallel"] ? sizes["parallel"]
                     : node["parallel"]           ? node["parallel"]
                                                  : source.parallel) {}

  void readModel();
  void readPrompts();
  void readStrategy();
  void readRoles();
  void readRotation();
  void readLoop();
  void readRequests();
  void checkSizes();
};

// The model and its parallel split: from `sizes: {derive: kv-request, ...}`,
// the test, or the top of the scenario.
void KvPushReader::readModel() {
  // Prompt lengths come from `sizes: {derive: kv-request, block_tokens, prompt_tokens}`
  // (the loader turns them into the instance sizes), or from this test's own
  // `prompt_tokens` / `block_tokens` next to literal sizes that must match.
  if (derived) {
    const YAML::Node what = sizes["derive"];
    if (!what || !what.IsScalar() || what.Scalar() != "kv-request")
      failAt(file, what ? what : sizes,
             "kvpush test '" + spec.name +
                 "' takes 'sizes: {derive: kv-request, block_tokens: 16, "
                 "prompt_tokens: [...]}' (one instance per prompt length)");
    for (const char* key : {"prompt_tokens", "block_tokens"})
      if (node[key])
        failAt(file, node[key], std::string("'") + key + "' is given in 'sizes' already; give it in one place");
  }
  if (!modelNode)
    failAt(file, node,
           "test '" + spec.name +
               "' (kvpush) needs a model: 'model:' in the test or at the top "
               "of the scenario, a preset name (" +
               model::knownPresetNames() + ") or a mapping");
  try {
    c.model = model::modelSpecFromYaml(modelNode);
    c.parallel = parallelNode ? model::parallelLayoutFromYaml(parallelNode) : model::ParallelLayout{};
  } catch (const model::ModelSpecError& e) {
    throw scenario::modelErrorAt(file, e, node);
  }
}

void KvPushReader::readPrompts() {
  if (derived) {
    scenario::ParamReader sp(spec, file, sizes, "sizes.");
    c.blockTokens = static_cast<std::uint32_t>(sp.integer("block_tokens", 16, 1, 4096));
    if (!sizes["prompt_tokens"]) failAt(file, sizes, "'derive: kv-request' needs 'prompt_tokens', e.g. [2048, 8192]");
    c.promptTokens = readTokenList(sizes["prompt_tokens"], file, spec.name);
  } else {
    c.blockTokens = static_cast<std::uint32_t>(p.integer("block_tokens", 16, 1, 4096));
    if (!node["prompt_tokens"])
      failAt(file, node,
             "test '" + spec.name +
                 "' (kvpush) needs prompt lengths: sizes: {derive: kv-request, block_tokens: 16, "
                 "prompt_tokens: [2048, 8192]}");
    c.promptTokens = readTokenList(node["prompt_tokens"], file, spec.name);
  }
}

void KvPushReader::readStrategy() {
  const auto strategy = p.choice("strategy", {"per-block", "staged", "layer-stream"}, "per-block");
  c.strategy = strategy == "staged"         ? Strategy::staged
               : strategy == "layer-stream" ? Strategy::layerStream
                                            : Strategy::perBlock;
  const auto direction = p.choice("direction", {"push", "push-put", "pull"}, "push");
  c.direction = direction == "pull" ? Direction::pull : direction == "push-put" ? Direction::pushPut : Direction::push;
}

// How many ranks prefill and how many decode (half each when neither is
// given), among the measuring ranks: under a neighbour condition the roles
// split the test's ranks into measuring ranks (these workers) and congestors,
// the same split for its quiet instance.
void KvPushReader::readRoles() {
  const int ranks = measuringRanksOf(spec, source.worldSize, 2);
  const bool congested = hasCongestedCondition(spec);
  const bool bothGiven = p.has("prefill_ranks") && p.has("decode_ranks");
  c.prefillRanks = static_cast<int>(p.integer("prefill_ranks", 0, 1, 1'000'000));
  c.decodeRanks = static_cast<int>(p.integer("decode_ranks", 0, 1, 1'000'000));
  if (c.prefillRanks == 0 && c.decodeRanks == 0) {
    c.prefillRanks = ranks / 2;
    c.decodeRanks = ranks - ranks / 2;
  } else if (c.prefillRanks == 0) {
    c.prefillRanks = ranks - c.decodeRanks;
  } else if (c.decodeRanks == 0) {
    c.decodeRanks = ranks - c.prefillRanks;
  }
  if (c.prefillRanks < 1 || c.decodeRanks < 1 || c.participants() > ranks)
    p.fail(bothGiven || p.has("prefill_ranks") ? "prefill_ranks" : "decode_ranks",
           "test '" + spec.name + "' needs at least one prefill and one decode rank within its " +
               std::to_string(ranks) + " measuring ranks; got prefill_ranks " + std::to_string(c.prefillRanks) +
               ", decode_ranks " + std::to_string(c.decodeRanks) +
               (congested ? " (under a neighbour condition the other ranks make the load: half measure unless "
                            "'roles: {canaries: N}' says how many)"
                          : ""));
}

// The ring rotates the two-sided push only: a one-sided direction exposes
// each rank's pool once for the roles it has, and the rounds would need it
// again for the other role.
void KvPushReader::readRotation() {
  c.measuringRanks = measuringRanksOf(spec, source.worldSize, 2);
  const bool ring = p.choice("role_rotation", {"fixed", "ring"}, "fixed") == "ring";
  c.rotationCycles = static_cast<int>(p.integer("rotation_cycles", 1, 1, 1000));
  if (!ring) {
    if (p.has("rotation_cycles")) p.fail("rotation_cycles", "'rotation_cycles' applies to 'role_rotation: ring' only");
    return;
  }
  c.rotation = RoleRotation::ring;
  if (isOneSided(c.direction))
    p.fail("role_rotation", std::string("'role_rotation: ring' rotates the two-sided push only; 'direction: ") +
                                directionName(c.direction) + "' keeps fixed roles (drop one of the two)");
}

void KvPushReader::readLoop() {
  auto loop = p.mapping("loop", {"mode", "in_flight", "rate"});
  c.loop = loop.choice("mode", {"closed", "open"}, "closed") == "open" ? LoopMode::open : LoopMode::closed;
  c.inFlight = static_cast<int>(loop.integer("in_flight", 1, 1, 64));
  if (c.loop == LoopMode::open) {
    if (!node["loop"]["rate"])
      p.fail("loop", "'loop: {mode: open}' needs 'rate' (requests per second per prefill rank)");
    c.ratePerSecond = readPositiveNumber(node["loop"]["rate"], file, "loop.rate");
  } else if (node["loop"] && node["loop"]["rate"]) {
    failAt(file, node["loop"]["rate"], "'rate' applies to 'mode: open' only; a closed loop is paced by 'in_flight'");
  }
}

void KvPushReader::readRequests() {
  c.requests = static_cast<int>(p.integer("requests", spec.iterations, 1, 1'000'000));
  c.warmupRequests = static_cast<int>(p.integer("warmup_requests", std::min(spec.warmup, 2), 0, 1'000'000));
  if (const YAML::Node n = node["compute_per_layer"]) {
    if (!n.IsScalar()) failAt(file, n, "'compute_per_layer' must be a duration such as 200us");
    try {
      c.computePerLayerSeconds = scenario::parseDurationSeconds(n.Scalar());
    } catch (const std::invalid_argument& e) {
      failAt(file, n, e.what());
    }
    if (c.strategy != Strategy::layerStream)
      failAt(file, n, "'compute_per_layer' applies to 'strategy: layer-stream' only");
  }
  c.poolBlocks = static_cast<std::uint64_t>(p.integer("pool_blocks", 0, 1, std::int64_t{1} << 31));
}

// The sizes the instances run at are the KV bytes of the prompt lengths.
void KvPushReader::checkSizes() {
  // The layout must exist for this model and split (kv heads divisible by tp...).
  try {
    (void)layoutOf(c, 1);
  } catch (const std::invalid_argument& e) {
    failAt(file, parallelNode ? parallelNode : modelNode, e.what());
  }

  std::int64_t largest = 0;
  std::vector<std::int64_t> expected;
  for (const auto tokens : c.promptTokens) {
    expected.push_back(requestBytesPerRank(c, tokens));
    largest = std::max(largest, tokens);
  }
  if (spec.sizes != expected) {
    const YAML::Node at = node["sizes"] ? node["sizes"] : node;
    failAt(file, at,
           "kvpush test '" + spec.name +
               "': 'sizes' must list the KV bytes per rank of each prompt length, in the order of "
               "'prompt_tokens' " +
               joinedSizes(c.promptTokens) + " (" + c.model.name + ", tp " + std::to_string(c.parallel.tp) +
               ", block_tokens " + std::to_string(c.blockTokens) + "): " + joinedSizes(expected) + ", got " +
               joinedSizes(spec.sizes) +
               (derived ? " (does 'sizes' derive with another model than the test's 'model'?)"
                        : "; simplest: sizes: {derive: kv-request, block_tokens: " + std::to_string(c.blockTokens) +
                              ", prompt_tokens: " + joinedSizes(c.promptTokens) + "}"));
  }
  if (c.poolBlocks != 0 && c.poolBlocks < poolBlocksNeeded(c, largest))
    p.fail("pool_blocks", "'pool_blocks' " + std::to_string(c.poolBlocks) +
                              " is too small: " + std::to_string(poolBlocksNeeded(c, largest)) +
                              " blocks are in flight at once on a decode rank for " + std::to_string(largest) +
                              "-token prompts");
}

}  // namespace

KvPushConfig readKvPushConfig(const scenario::TestSpec& spec, const scenario::TestSource& source) {
  KvPushReader r(spec, source);
  r.readModel();
  r.readPrompts();
  r.readStrategy();
  r.readRoles();
  r.readRotation();
  r.readLoop();
  r.readRequests();
  r.checkSizes();
  return r.c;
}

kv::KvBlockLayout layoutOf(const KvPushConfig& config, std::uint64_t poolBlocks) {
  return kv::KvBlockLayout::fromModel(config.model, config.parallel, config.blockTokens, poolBlocks);
}

std::uint64_t blocksForTokens(const KvPushConfig& config, std::int64_t tokens) {
  return (static_cast<std::uint64_t>(tokens) + config.blockTokens - 1) / config.blockTokens;
}

std::int64_t requestBytesPerRank(const KvPushConfig& config, std::int64_t tokens) {
  return static_cast<std::int64_t>(layoutOf(config, 1).blockBytesAllLayers() * blocksForTokens(config, tokens));
}

std::uint64_t messagesPerRequest(const KvPushConfig& config, std::int64_t tokens) {
  if (config.strategy == Strategy::staged) return 1;
  const auto layout = layoutOf(config, 1);
  return std::uint64_t{layout.layers} * layout.planes() * blocksForTokens(config, tokens);
}

std::uint64_t poolBlocksNeeded(const KvPushConfig& config, std::int64_t tokens) {
  const auto perRequest = blocksForTokens(config, tokens);
  // Requests rotate over decode ranks, so any prefill rank may be sending to
  // any decode rank: a decode rank reserves inFlight requests per prefill rank.
  return perRequest * static_cast<std::uint64_t>(config.inFlight) * static_cast<std::uint64_t>(config.prefillRanks);
}

std::int64_t promptTokensForBytes(const KvPushConfig& config, std::int64_t bytes) {
  for (const auto tokens : config.promptTokens)
    if (requestBytesPerRank(config, tokens) == bytes) return tokens;
  throw std::invalid_argument("no prompt length has " + std::to_string(bytes) + " KV bytes per rank");
}

}  // namespace fabscope::suite::kvpush
