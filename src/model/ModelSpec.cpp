#include "model/ModelSpec.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace fabscope::model {

std::uint32_t dtypeBytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::bf16:
      return 2;
    case Dtype::fp16:
      return 2;
    case Dtype::fp8:
      return 1;
    case Dtype::fp32:
      return 4;
  }
  throw std::logic_error("dtypeBytes: unhandled Dtype value");
}

std::string_view dtypeName(Dtype dtype) {
  switch (dtype) {
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp16:
      return "fp16";
    case Dtype::fp8:
      return "fp8";
    case Dtype::fp32:
      return "fp32";
  }
  throw std::logic_error("dtypeName: unhandled Dtype value");
}

std::optional<Dtype> parseDtype(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  struct Spelling {
    const char* text;
    Dtype dtype;
  };
  static constexpr Spelling spellings[] = {
      {"bf16", Dtype::bf16},    {"bfloat16", Dtype::bf16}, {"fp16", Dtype::fp16},    {"float16", Dtype::fp16},
      {"half", Dtype::fp16},    {"fp8", Dtype::fp8},       {"float8", Dtype::fp8},   {"e4m3", Dtype::fp8},
      {"fp8_e4m3", Dtype::fp8}, {"e5m2", Dtype::fp8},      {"fp8_e5m2", Dtype::fp8}, {"fp32", Dtype::fp32},
      {"float32", Dtype::fp32}, {"float", Dtype::fp32},
  };
  for (const auto& s : spellings)
    if (lower == s.text) return s.dtype;
  return std::nullopt;
}

std::string knownDtypeNames() { return "bf16, fp16, fp8, fp32"; }

void ModelSpec::validate() const {
  const std::string who = "model '" + name + "': ";
  auto positive = [&](std::uint32_t v, const char* field) {
    if (v == 0) throw std::invalid_argument(who + field + " must be a positive integer");
  };
  positive(hiddenSize, "hidden_size");
  positive(layers, "layers");
  positive(attentionHeads, "attention_heads");
  if (mla) {
    positive(mla->kvLoraRank, "mla.kv_lora_rank");
    // A zero RoPE part is legal in principle (pure latent), so not checked.
  } else {
    positive(kvHeads, "kv_heads");
    positive(headDim, "head_dim");
    if (attentionHeads % kvHeads != 0)
      throw std::invalid_argument(who + "attention_heads (" + std::to_string(attentionHeads) +
                                  ") must be a multiple of kv_heads (" + std::to_string(kvHeads) +
                                  ") for grouped-query attention");
  }
  if (moe) {
    positive(moe->routedExperts, "moe.experts");
    positive(moe->expertsPerToken, "moe.experts_per_token");
    if (moe->expertsPerToken > moe->routedExperts)
      throw std::invalid_argument(who + "moe.experts_per_token (" + std::to_string(moe->expertsPerToken) +
                                  ") exceeds moe.experts (" + std::to_string(moe->routedExperts) + ")");
  }
}

void validateLayout(const ParallelLayout& layout) {
  if (layout.tp == 0) throw std::invalid_argument("parallel layout: tp must be at least 1");
}

namespace {

std::vector<ModelSpec> buildPresets() {
  std::vector<ModelSpec> presets;
  // meta-llama/Meta-Llama-3-8B config.json
  {
    ModelSpec m;
    m.name = "llama3-8b";
    m.hiddenSize = 4096;
    m.layers = 32;
    m.attentionHeads = 32;
    m.kvHeads = 8;
    m.headDim = 128;
    m.dtype = Dtype::bf16;
    presets.push_back(m);
  }
  // meta-llama/Meta-Llama-3-70B config.json (Llama 3.1/3.3 70B share the shape)
  {
    ModelSpec m;
    m.name = "llama3-70b";
    m.hiddenSize = 8192;
    m.layers = 80;
    m.attentionHeads = 64;
    m.kvHeads = 8;
    m.headDim = 128;
    m.dtype = Dtype::bf16;
    presets.push_back(m);
  }
  // meta-llama/Llama-3.1-405B config.json
  {
    ModelSpec m;
    m.name = "llama3-405b";
    m.hiddenSize = 16384;
    m.layers = 126;
    m.attentionHeads = 128;
    m.kvHeads = 8;
    m.headDim = 128;
    m.dtype = Dtype::bf16;
    presets.push_back(m);
  }
  // deepseek-ai/DeepSeek-V3 config.json: MLA with kv_lora_rank 512 and
  // qk_rope_head_dim 64; 256 routed experts + 1 shared, top-8, expert FFN 2048;
  // first_k_dense_replace 3 (layers 0-2 dense, 58 MoE layers).
  // head_dim records v_head_dim (128); kv_heads = num_key_value_heads (128)
  // for completeness, though MLA caches the latent instead of per-head K/V.
  {
    ModelSpec m;
    m.name = "deepseek-v3";
    m.hiddenSize = 7168;
    m.layers = 61;
    m.attentionHeads = 128;
    m.kvHeads = 128;
    m.headDim = 128;
    m.dtype = Dtype::bf16;
    m.mla = MlaSpec{512, 64};
    m.moe = MoeSpec{256, 1, 8, 2048, 3};
    presets.push_back(m);
  }
  for (const auto& m : presets) m.validate();
  return presets;
}

}  // namespace

const std::vector<ModelSpec>& modelPresets() {
  static const std::vector<ModelSpec> presets = buildPresets();
  return presets;
}

std::string knownPresetNames() {
  std::string names;
  for (const auto& m : modelPresets()) {
    if (!names.empty()) names += ", ";
    names += m.name;
  }
  return names;
}

const ModelSpec& findPreset(std::string_view name) {
  for (const auto& m : modelPresets())
    if (m.name == name) return m;
  throw std::invalid_argument("unknown model preset '" + std::string(name) + "'; known presets: " + knownPresetNames());
}

}  // namespace fabscope::model
