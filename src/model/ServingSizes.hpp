#pragma once
// The message sizes a scenario derives from a served model
// (`sizes: {derive: ..., ...}`): which derivations there are, what each
// needs, and the sizes with their formulas. The scenario loader only reads the
// mapping's numbers and says where in the file a problem is; the serving
// arithmetic is here, beside the formulas it combines (TrafficSizes.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "model/ModelSpec.hpp"
#include "model/TrafficSizes.hpp"

namespace fabscope::model {

// tp-allreduce, kv-block-layer, kv-block, kv-request, moe-dispatch, moe-dispatch-token.
const std::vector<std::string>& sizeDerivations();

// One `sizes: {derive: ...}` mapping's numbers (a count not given is empty, or 0).
struct SizeDerivationRequest {
  std::string derive;                        // one of sizeDerivations()
  std::vector<std::uint64_t> decodeBatches;  // decode_batch (tp-allreduce)
  std::vector<std::uint64_t> prefillChunks;  // prefill_chunk (tp-allreduce)
  std::uint32_t blockTokens = 0;             // block_tokens (kv-*)
  std::vector<std::uint64_t> promptTokens;   // prompt_tokens (kv-request)
  std::vector<std::uint64_t> tokens;         // tokens per rank (moe-dispatch*)
};

// One derived size and the mapping's key it came from ("" when the mapping as a
// whole: kv-block), for the loader to point at.
struct DerivedSizeFrom {
  DerivedSize size;
  std::string key;
};

// The sizes, in the order of their counts. Throws std::invalid_argument for a
// derivation that is not known or a key it needs and lacks ("'derive:
// kv-request' needs 'prompt_tokens'"), and for what the formulas refuse (a
// model without experts asked for a MoE dispatch, tp not dividing kv_heads).
std::vector<DerivedSizeFrom> deriveSizes(const ModelSpec& model, const ParallelLayout& layout,
                                         const SizeDerivationRequest& request);

}  // namespace fabscope::model
