#include "kinds/mix/MixConfig.hpp"

#include <optional>
#include <stdexcept>

#include "model/ModelSpecYaml.hpp"
#include "model/TrafficSizes.hpp"
#include "scenario/TestSource.hpp"
#include "scenario/Units.hpp"

namespace fabscope::suite::mix {

const char* className(TrafficClass c) {
  switch (c) {
    case TrafficClass::allreduce:
      return "allreduce";
    case TrafficClass::alltoall:
      return "alltoall";
    case TrafficClass::kvpush:
      return "kvpush";
    case TrafficClass::api:
      return "api";
  }
  return "?";
}

Role RoleSplit::roleOf(int g) const {
  if (g < prefill) return Role::prefill;
  if (g < prefill + decode) return Role::decode;
  if (g < prefill + decode + frontend) return Role::frontend;
  return Role::idle;
}

void checkSplit(const RoleSplit& s, int groupSize, bool kv, bool api, int apiClients) {
  if (s.decode < 1) throw std::invalid_argument("a mix needs at least 1 decode rank");
  if (s.tp < 1 || s.decode % s.tp != 0)
    throw std::invalid_argument(std::to_string(s.decode) + " decode ranks do not split into TP groups of " +
                                std::to_string(s.tp));
  if (kv && s.prefill < 1) throw std::invalid_argument("the kvpush class needs at least 1 prefill rank");
  if (!kv && s.prefill > 0) throw std::invalid_argument("prefill ranks without the kvpush class would stay idle");
  if (api && (apiClients < 1 || s.frontend - apiClients < 1))
    throw std::invalid_argument(
        std::to_string(s.frontend) + " front-end ranks cannot hold " + std::to_string(apiClients) +
        " api clients and at least 1 server (give 'clients' and 'frontend' so both have ranks)");
  if (!api && s.frontend > 0) throw std::invalid_argument("front-end ranks without the api class would stay idle");
  if (s.used() > groupSize)
    throw std::invalid_argument("the layout needs " + std::to_string(s.prefill) + " prefill + " +
                                std::to_string(s.decode) + " decode + " + std::to_string(s.frontend) + " front-end = " +
                                std::to_string(s.used()) + " ranks, but the test has " + std::to_string(groupSize));
}

namespace {

// Reads a mix test's keys in a fixed order, so that the first problem
// reported is always the same one.
struct MixReader {
  const scenario::TestSpec& spec;
  const scenario::TestSource& source;
  scenario::ParamReader p;
  const YAML::Node& node;
  model::ModelSpec m;
  std::optional<scenario::ParamReader> roles;  // the `layout` mapping
  MixConfig c;

  [[noreturn]] void failAt(const YAML::Node& at, const std::string& message) const {
    throw scenario::ScenarioError(scenario::positionOf(source.file, at, node) + ": test '" + spec.name +
                                  "' (mix): " + message);
  }
  void readModel();
  void readClasses();
  void readLayout();
  void readDecodeStep();
  void readKv();
  void readApiAndSplit();
};

// The model sizes every class; the test's one size is an api answer chunk.
void MixReader::readModel() {
  if (spec.sizes.size() != 1)
    p.fail("sizes", "test '" + spec.name + "' (mix) takes one size: the bytes of one api answer chunk");

  const YAML::Node modelNode = node["model"] ? node["model"] : source.model;
  if (!modelNode)
    failAt(node, "needs a model ('model: llama3-70b' here or at the top of the scenario): it sizes every class");
  try {
    m = model::modelSpecFromYaml(modelNode);
  } catch (const model::ModelSpecError& e) {
    throw scenario::modelErrorAt(source.file, e, node);
  }
  c.modelName = m.name;
}

// Which classes: all that the model has by default; all-to-all only with experts.
void MixReader::readClasses() {
  const YAML::Node classes = node["classes"];
  if (classes) {
    if (!classes.IsSequence() || classes.size() == 0)
      failAt(classes, "'classes' is a list of allreduce, alltoall, kvpush, api");
    for (const auto& item : classes) {
      const std::string name = item.IsScalar() ? item.Scalar() : "";
      int k = -1;
      for (int i = 0; i < kClassCount; ++i)
        if (name == className(static_cast<TrafficClass>(i))) k = i;
      if (k < 0) failAt(item, "unknown class '" + name + "'; expected allreduce, alltoall, kvpush or api");
      c.classEnabled[k] = true;
      if (static_cast<TrafficClass>(k) == TrafficClass::alltoall && !m.moe)
        failAt(item, "class alltoall routes tokens to experts, but model '" + m.name +
                         "' has no MoE layers (leave alltoall out, or use a model with experts, e.g. deepseek-v3)");
    }
  } else {
    for (int i = 0; i < kClassCount; ++i) c.classEnabled[i] = true;
    c.classEnabled[static_cast<int>(TrafficClass::alltoall)] = m.moe.has_value();
  }
}

void MixReader::readLayout() {
  if (!p.has("layout")) failAt(node, "needs 'layout: {prefill: P, decode: D, tp: T, frontend: F}' (ranks per role)");
  roles.emplace(p.mapping("layout", {"prefill", "decode", "tp", "frontend"}));
  c.roles.prefill = static_cast<int>(roles->integer("prefill", 0, 0, 1'000'000));
  c.roles.decode = static_cast<int>(roles->integer("decode", 0, 0, 1'000'000));
  c.roles.tp = static_cast<int>(roles->integer("tp", 1, 1, 1'000'000));
  c.roles.frontend = static_cast<int>(roles->integer("frontend", 0, 0, 1'000'000));
}

// The decode step's pace and sizes: its all-reduce, and (MoE) its dispatch and combine.
void MixReader::readDecodeStep() {
  if (p.has("step_interval")) {
    try {
      c.stepIntervalSeconds = scenario::parseDurationSeconds(node["step_interval"].Scalar());
    } catch (const std::invalid_argument& e) {
      p.fail("step_interval", "'step_interval' in test '" + spec.name + "': " + e.what());
    }
    if (c.stepIntervalSeconds < 1e-5 || c.stepIntervalSeconds > 10)
      p.fail("step_interval", "'step_interval' in test '" + spec.name + "' must be 10us to 10s");
  }
  c.decodeBatch = p.integer("decode_batch", 8, 1, 65536);
  const auto ar = model::allReduceBytesForDecode(m, static_cast<std::uint64_t>(c.decodeBatch));
  c.allreduceBytes = static_cast<std::int64_t>(ar.bytes);
  c.allreduceFormula = ar.formula;
  if (m.moe) {
    c.routing.experts = static_cast<int>(m.moe->routedExperts);
    c.routing.topK = static_cast<int>(m.moe->expertsPerToken);
    c.dispatchTokenBytes = static_cast<std::int64_t>(model::moeDispatchBytesPerToken(m, model::Dtype::fp8).bytes);
    c.combineTokenBytes = static_cast<std::int64_t>(model::moeCombineBytesPerToken(m).bytes);
  }
}

// The KV pushes from prefill to decode: rate, count and the bytes of one request.
void MixReader::readKv() {
  auto kv = p.mapping("kv", {"rate", "requests", "prompt_tokens", "block_tokens"});
  c.kvRatePerSecond = kv.number("rate", 20, 0.001, 1e6);
  c.kvRequests = static_cast<int>(kv.integer("requests", 8, 1, 100'000));
  const auto promptTokens = kv.integer("prompt_tokens", 64, 1, 1'000'000);
  const auto blockTokens = kv.integer("block_tokens", 16, 1, 4096);
  try {
    const auto kvSize =
        model::kvBytesPerRequest(m, model::ParallelLayout{static_cast<std::uint32_t>(c.roles.tp)},
                                 static_cast<std::uint32_t>(blockTokens), static_cast<std::uint64_t>(promptTokens));
    c.kvBytesPerRequest = static_cast<std::int64_t>(kvSize.bytes);
    c.kvFormula = kvSize.formula;
  } catch (const std::invalid_argument& e) {
    roles->fail("tp", std::string("'layout.tp' cannot shard ") + m.name + "'s KV cache: " + e.what());
  }
  if (c.kvBytesPerRequest > INT32_MAX - 64)
    kv.fail("prompt_tokens", "one request's KV shard is over 2 GiB (one MPI message); give fewer prompt_tokens");
}

void MixReader::readApiAndSplit() {
  if (c.has(TrafficClass::api)) {
    c.api = api::readApiConfig(spec, source);
    c.api.chunkBytes = spec.sizes.front();
  }
  try {
    checkSplit(c.roles,
               source.worldSize > 0 && spec.ranks > 0 ? std::min(spec.ranks, source.worldSize) : source.worldSize,
               c.has(TrafficClass::kvpush), c.has(TrafficClass::api), c.api.clients);
  } catch (const std::invalid_argument& e) {
    p.fail("layout", "test '" + spec.name + "' (mix): " + e.what());
  }
}

}  // namespace

MixConfig readMixConfig(const scenario::TestSpec& spec, const scenario::TestSource& source) {
  MixReader r{spec, source, scenario::ParamReader(spec, source), source.test, {}, std::nullopt, {}};
  r.readModel();
  r.readClasses();
  r.readLayout();
  r.readDecodeStep();
  r.readKv();
  r.readApiAndSplit();
  return r.c;
}

}  // namespace fabscope::suite::mix
