#include "kinds/collectives/AllToAllConfig.hpp"

#include <stdexcept>

#include "model/ModelSpecYaml.hpp"
#include "model/TrafficSizes.hpp"
#include "scenario/TestSource.hpp"

namespace fabscope::suite::moe {
namespace {

using scenario::ScenarioError;

[[noreturn]] void failAt(const std::string& file, const YAML::Node& node, const std::string& message) {
  throw ScenarioError(scenario::positionOf(file, node) + ": " + message);
}

}  // namespace

AllToAllConfig readAllToAllConfig(const scenario::TestSpec& spec, const scenario::TestSource& source) {
  scenario::ParamReader p(spec, source);
  const YAML::Node& node = source.test;
  AllToAllConfig c;
  const YAML::Node sizes = node["sizes"];
  const YAML::Node modelNode = sizes && sizes.IsMap() && sizes["model"] ? sizes["model"]
                               : node["model"]                          ? node["model"]
                                                                        : source.model;
  std::optional<model::ModelSpec> m;
  if (modelNode) {
    try {
      m = model::modelSpecFromYaml(modelNode);
    } catch (const model::ModelSpecError& e) {
      throw scenario::modelErrorAt(source.file, e, node);
    }
    if (!m->moe)
      failAt(source.file, node["model"] ? node["model"] : node,
             "test '" + spec.name + "' (alltoall) routes tokens to experts, but model '" + m->name +
                 "' has no MoE layers (use a model with experts, e.g. deepseek-v3, or give experts, top_k and "
                 "token_bytes without a model)");
    c.modelName = m->name;
  }
  const int modelExperts = m ? static_cast<int>(m->moe->routedExperts) : 0;
  const int modelTopK = m ? static_cast<int>(m->moe->expertsPerToken) : 0;
  c.routing.experts = static_cast<int>(p.integer("experts", modelExperts, 1, 1'000'000));
  c.routing.topK = static_cast<int>(p.integer("top_k", modelTopK, 1, 1'000'000));
  if (c.routing.experts == 0 || c.routing.topK == 0)
    failAt(source.file, node,
           "test '" + spec.name +
               "' (alltoall) needs 'experts' and 'top_k' (or a model with experts, "
               "e.g. model: deepseek-v3)");
  if (c.routing.topK > c.routing.experts)
    p.fail("top_k", "'top_k' in test '" + spec.name + "' is " + std::to_string(c.routing.topK) + ", more than its " +
                        std::to_string(c.routing.experts) + " experts");

  auto routing = p.mapping("routing", {"popularity", "exponent"});
  c.routing.popularity =
      routing.choice("popularity", {"uniform", "zipf"}, "uniform") == "zipf" ? Popularity::zipf : Popularity::uniform;
  if (routing.has("exponent") && c.routing.popularity != Popularity::zipf)
    routing.fail("exponent", "'routing.exponent' applies to 'popularity: zipf' only");
  c.routing.zipfExponent = routing.number("exponent", 1.0, 0.01, 10.0);

  auto tokenBytes = p.mapping("token_bytes", {"dispatch", "combine"});
  std::int64_t dispatch = 0, combine = 0;
  if (m) {
    dispatch = static_cast<std::int64_t>(model::moeDispatchBytesPerToken(*m, model::Dtype::fp8).bytes);
    combine = static_cast<std::int64_t>(model::moeCombineBytesPerToken(*m).bytes);
    c.sizeSource = "per token from " + m->name + ": dispatch fp8 " + std::to_string(dispatch) + " B, combine bf16 " +
                   std::to_string(combine) + " B";
  }
  c.dispatchTokenBytes = tokenBytes.integer("dispatch", dispatch, static_cast<std::int64_t>(sizeof(TokenHeader)) + 1,
                                            std::int64_t{1} << 24);
  c.combineTokenBytes =
      tokenBytes.integer("combine", combine, static_cast<std::int64_t>(sizeof(TokenHeader)) + 1, std::int64_t{1} << 24);
  if (c.dispatchTokenBytes == 0 || c.combineTokenBytes == 0)
    failAt(source.file, node,
           "test '" + spec.name +
               "' (alltoall) needs the bytes of one token: 'token_bytes: {dispatch: 7408, "
               "combine: 14336}' or a model with experts");
  if (tokenBytes.has("dispatch") || tokenBytes.has("combine"))
    c.sizeSource = "per token: dispatch " + std::to_string(c.dispatchTokenBytes) + " B, combine " +
                   std::to_string(c.combineTokenBytes) + " B (token_bytes)";
  if (sizes && sizes.IsMap() &&
      !(sizes["derive"] && sizes["derive"].IsScalar() &&
        (sizes["derive"].Scalar() == "moe-dispatch" || sizes["derive"].Scalar() == "moe-dispatch-token")))
    failAt(source.file, sizes,
           "alltoall test '" + spec.name +
               "' takes 'sizes: {derive: moe-dispatch, tokens: [1, 128]}' or "
               "literal sizes (tokens x dispatch bytes per token)");
  if (tokenBytes.has("dispatch") && sizes && sizes.IsMap())
    tokenBytes.fail("dispatch",
                    "'token_bytes.dispatch' and derived sizes disagree on who sizes a token; with "
                    "'derive: moe-dispatch' the model does (drop token_bytes.dispatch, or give literal sizes)");
  for (const auto bytes : spec.sizes) (void)tokensOf(c, bytes, spec);
  return c;
}

std::int64_t tokensOf(const AllToAllConfig& c, std::int64_t bytes, const scenario::TestSpec& spec) {
  if (bytes % c.dispatchTokenBytes != 0)
    throw ScenarioError(spec.where("sizes") + ": alltoall test '" + spec.name + "': size " + std::to_string(bytes) +
                        " B is not a whole number of " + std::to_string(c.dispatchTokenBytes) +
                        " B token copies (a size is tokens per rank x dispatch bytes per token; " + c.sizeSource + ")");
  return bytes / c.dispatchTokenBytes;
}

}  // namespace fabscope::suite::moe
