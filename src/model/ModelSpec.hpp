#pragma once
// What fabscope needs to know about a served model to derive real message
// sizes: TP all-reduce payloads, KV-cache block sizes, MoE dispatch copies.
// Presets carry the published config.json numbers of each model.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabscope::model {

enum class Dtype { bf16, fp16, fp8, fp32 };

std::uint32_t dtypeBytes(Dtype dtype);
std::string_view dtypeName(Dtype dtype);
// Accepts bf16/fp16/fp8/fp32 and the common spellings (bfloat16, float16,
// half, e4m3, float8, float32, float). Returns nullopt for anything else.
std::optional<Dtype> parseDtype(std::string_view text);
// "bf16, fp16, fp8, fp32" for error messages.
std::string knownDtypeNames();

// Multi-head latent attention (DeepSeek-V2/V3): the cache holds one
// compressed latent plus the decoupled RoPE key per token per layer, shared by
// all heads, so it has no K/V split and is not divided by tensor parallelism.
struct MlaSpec {
  std::uint32_t kvLoraRank = 0;   // compressed KV latent width
  std::uint32_t ropeHeadDim = 0;  // decoupled RoPE key width
  std::uint32_t latentValues() const { return kvLoraRank + ropeHeadDim; }
  bool operator==(const MlaSpec&) const = default;
};

struct MoeSpec {
  std::uint32_t routedExperts = 0;
  std::uint32_t sharedExperts = 0;
  std::uint32_t expertsPerToken = 0;     // top-k routing
  std::uint32_t expertIntermediate = 0;  // FFN width of one expert
  // Leading layers whose MLP is dense (config.json's first_k_dense_replace;
  // DeepSeek-V3: 3); the rest are MoE layers. 0 where it is not known (a
  // model given in a scenario): every layer then counts as an MoE layer.
  std::uint32_t leadingDenseLayers = 0;
  bool operator==(const MoeSpec&) const = default;
};

struct ModelSpec {
  std::string name;
  std::uint32_t hiddenSize = 0;
  std::uint32_t layers = 0;
  std::uint32_t attentionHeads = 0;
  std::uint32_t kvHeads = 0;
  std::uint32_t headDim = 0;
  // Activations (all-reduce payloads) are carried in `dtype`; the KV cache may
  // be stored narrower (fp8 KV caches are common), hence a separate field.
  Dtype dtype = Dtype::bf16;
  std::optional<Dtype> kvCacheDtype;  // empty: same as dtype
  std::optional<MlaSpec> mla;
  std::optional<MoeSpec> moe;

  Dtype kvDtype() const { return kvCacheDtype.value_or(dtype); }
  bool usesMla() const { return mla.has_value(); }

  // Throws std::invalid_argument naming the first field that makes no sense
  // (zero sizes, kv_heads not dividing attention_heads, ...).
  void validate() const;
  bool operator==(const ModelSpec&) const = default;
};

// Tensor-parallel layout of one model replica.
struct ParallelLayout {
  std::uint32_t tp = 1;
  bool operator==(const ParallelLayout&) const = default;
};

// Throws std::invalid_argument when tp is 0.
void validateLayout(const ParallelLayout& layout);

const std::vector<ModelSpec>& modelPresets();
std::string knownPresetNames();  // "llama3-8b, llama3-70b, ..."
// Throws std::invalid_argument listing the known presets when `name` is none.
const ModelSpec& findPreset(std::string_view name);

}  // namespace fabscope::model
