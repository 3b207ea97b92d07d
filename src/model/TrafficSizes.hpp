#pragma once
// Message sizes a served model really puts on the fabric, each returned with
// the formula it came from so `fabscope list` can show the derivation.
#include <cstdint>
#include <string>

#include "model/ModelSpec.hpp"

namespace fabscope::model {

struct DerivedSize {
  std::uint64_t bytes = 0;
  std::string formula;  // e.g. "32 tokens x 8192 hidden x 2 B (bf16) = 524288 B (512 KiB)"
};

struct DerivedCount {
  std::uint64_t count = 0;
  std::string formula;
};

// "512 KiB", "320 MiB", "7408 B", "1.50 MiB": binary units, exact when whole.
std::string humanBytes(std::uint64_t bytes);

// Megatron-style tensor parallelism: every rank holds the full activations of
// the tokens in flight, so one all-reduce moves tokens x hidden x dtype bytes
// whatever the TP size.
DerivedSize allReduceBytesForDecode(const ModelSpec& model, std::uint64_t batchSize);
DerivedSize allReduceBytesForPrefill(const ModelSpec& model, std::uint64_t chunkTokens);
// The model's layers by their MLP: dense (every layer of a model without
// experts; a model with experts: its leading dense layers) and MoE (the rest).
std::uint32_t denseLayers(const ModelSpec& model);
std::uint32_t moeLayers(const ModelSpec& model);
// TP all-reduces in one forward step (one decode token step or one prefill
// chunk): one per layer after attention and one per dense layer after its MLP
// (an MoE layer's experts end in the MoE combine instead; DeepSeek-V3 at TP 8:
// 61 + 3 = 64); 0 when tp == 1 (no tensor parallelism, or DP attention: each
// rank runs its own requests' attention). The counts of the analysis'
// placement (analysis/fabscope_analysis/serving/placement.py).
DerivedCount allReducesPerForwardStep(const ModelSpec& model, const ParallelLayout& layout);
// MoE dispatch + combine rounds in one forward step: one per MoE layer
// (DeepSeek-V3: 58), whatever the TP size; 0 for a model without experts.
DerivedCount moeRoundsPerForwardStep(const ModelSpec& model);

// KV heads one rank stores: kv_heads / tp, at least 1 (heads are replicated
// when tp exceeds kv_heads). Throws std::invalid_argument when neither
// divides the other (no serving engine shards that way). MLA: not split, the
// whole latent is on every rank; returns 0 for MLA models.
std::uint32_t kvHeadsPerRank(const ModelSpec& model, const ParallelLayout& layout);

// GQA: 2 (K and V) x block_tokens x kv_heads_per_rank x head_dim x kv dtype bytes.
// MLA: block_tokens x (kv_lora_rank + rope_dim) x kv dtype bytes.
DerivedSize kvBytesPerBlockPerLayer(const ModelSpec& model, const ParallelLayout& layout, std::uint32_t blockTokens);
// The same over all layers: what one rank holds for one block of tokens.
DerivedSize kvBytesPerBlock(const ModelSpec& model, const ParallelLayout& layout, std::uint32_t blockTokens);
// ceil(prompt_tokens / block_tokens) blocks x per-block bytes, per rank: what a
// prefill rank hands to its decode peer for one request.
DerivedSize kvBytesPerRequest(const ModelSpec& model, const ParallelLayout& layout, std::uint32_t blockTokens,
                              std::uint64_t promptTokens);
std::uint64_t blocksForTokens(std::uint64_t tokens, std::uint32_t blockTokens);

// One token's message in DeepEP's low-latency MoE dispatch: a 16 B header plus
// the hidden vector, in fp8 with one fp32 scale per 128 values, or in bf16.
// DeepSeek-V3 fp8: 16 + 7168 + 56 x 4 = 7408 B. Throws std::invalid_argument
// for dtypes other than fp8 and bf16 and for models without MoE.
DerivedSize moeDispatchBytesPerToken(const ModelSpec& model, Dtype dispatchDtype);
// One expert's result for one token in the combine (bf16 hidden state, as
// DeepEP's combine returns it): hidden x 2 B.
DerivedSize moeCombineBytesPerToken(const ModelSpec& model);

}  // namespace fabscope::model
