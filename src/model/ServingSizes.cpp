#include "model/ServingSizes.hpp"

#include <algorithm>
#include <stdexcept>

namespace fabscope::model {

const std::vector<std::string>& sizeDerivations() {
  static const std::vector<std::string> names = {"tp-allreduce", "kv-block-layer", "kv-block",
                                                 "kv-request",   "moe-dispatch",   "moe-dispatch-token"};
  return names;
}

namespace {

[[noreturn]] void needs(const std::string& derive, const char* key) {
  throw std::invalid_argument("'derive: " + derive + "' needs '" + key + "'");
}

}  // namespace

std::vector<DerivedSizeFrom> deriveSizes(const ModelSpec& model, const ParallelLayout& layout,
                                         const SizeDerivationRequest& request) {
  const auto& derive = request.derive;
  const auto& known = sizeDerivations();
  if (std::find(known.begin(), known.end(), derive) == known.end())
    throw std::invalid_argument("unknown size derivation '" + derive + "'");
  std::vector<DerivedSizeFrom> out;
  if (derive == "tp-allreduce") {
    if (request.decodeBatches.empty() && request.prefillChunks.empty())
      throw std::invalid_argument("'derive: tp-allreduce' needs decode_batch and/or prefill_chunk");
    for (auto b : request.decodeBatches) out.push_back({allReduceBytesForDecode(model, b), "decode_batch"});
    for (auto c : request.prefillChunks) out.push_back({allReduceBytesForPrefill(model, c), "prefill_chunk"});
    return out;
  }
  if (derive == "moe-dispatch" || derive == "moe-dispatch-token") {
    // tokens per rank x one token copy (fp8): a rank's dispatch payload with one
    // copy per token (the alltoall kind routes each to its top-k experts).
    if (request.tokens.empty()) needs(derive, "tokens");
    for (auto t : request.tokens) {
      auto d = moeDispatchBytesPerToken(model, Dtype::fp8);
      d.formula = std::to_string(t) + " tokens x (" + d.formula + ")";
      d.bytes *= t;
      out.push_back({d, "tokens"});
    }
    return out;
  }
  if (request.blockTokens == 0) needs(derive, "block_tokens");
  if (derive == "kv-block-layer") return {{kvBytesPerBlockPerLayer(model, layout, request.blockTokens), ""}};
  if (derive == "kv-block") return {{kvBytesPerBlock(model, layout, request.blockTokens), ""}};
  if (request.promptTokens.empty()) needs(derive, "prompt_tokens");
  for (auto p : request.promptTokens)
    out.push_back({kvBytesPerRequest(model, layout, request.blockTokens, p), "prompt_tokens"});
  return out;
}

}  // namespace fabscope::model
