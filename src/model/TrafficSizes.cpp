#include "model/TrafficSizes.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace fabscope::model {

namespace {

std::string dtypeTerm(Dtype dtype) {
  return std::to_string(dtypeBytes(dtype)) + " B (" + std::string(dtypeName(dtype)) + ")";
}

std::string equalsBytes(std::uint64_t bytes) {
  std::string s = " = " + std::to_string(bytes) + " B";
  if (bytes >= 1024) s += " (" + humanBytes(bytes) + ")";
  return s;
}

void requirePositive(std::uint64_t value, const char* what) {
  if (value == 0) throw std::invalid_argument(std::string(what) + " must be at least 1");
}

DerivedSize tokenActivations(const ModelSpec& model, std::uint64_t tokens, const char* tokenWord) {
  DerivedSize out;
  out.bytes = tokens * model.hiddenSize * dtypeBytes(model.dtype);
  out.formula = std::to_string(tokens) + " " + tokenWord + " x " + std::to_string(model.hiddenSize) + " hidden x " +
                dtypeTerm(model.dtype) + equalsBytes(out.bytes);
  return out;
}

}  // namespace

std::string humanBytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  std::uint64_t whole = bytes;
  while (unit < 5 && whole >= 1024 && whole % 1024 == 0) {
    whole /= 1024;
    ++unit;
  }
  if (whole < 1024 || unit == 5) return std::to_string(whole) + " " + units[unit];
  // Not a whole number of a larger unit: show two decimals in the largest unit.
  double value = static_cast<double>(bytes);
  unit = 0;
  while (unit < 5 && value >= 1024.0) {
    value /= 1024.0;
    ++unit;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %s", value, units[unit]);
  return text;
}

DerivedSize allReduceBytesForDecode(const ModelSpec& model, std::uint64_t batchSize) {
  requirePositive(batchSize, "decode batch size");
  return tokenActivations(model, batchSize, "tokens");
}

DerivedSize allReduceBytesForPrefill(const ModelSpec& model, std::uint64_t chunkTokens) {
  requirePositive(chunkTokens, "prefill chunk tokens");
  return tokenActivations(model, chunkTokens, "tokens");
}

std::uint32_t denseLayers(const ModelSpec& model) {
  if (!model.moe) return model.layers;
  return std::min(model.moe->leadingDenseLayers, model.layers);
}

std::uint32_t moeLayers(const ModelSpec& model) { return model.moe ? model.layers - denseLayers(model) : 0; }

DerivedCount allReducesPerForwardStep(const ModelSpec& model, const ParallelLayout& layout) {
  validateLayout(layout);
  DerivedCount out;
  if (layout.tp == 1) {
    out.formula = "tp=1: no tensor-parallel all-reduce (DP attention: each rank its own requests' attention)";
    return out;
  }
  const std::uint32_t dense = denseLayers(model);
  out.count = std::uint64_t{model.layers} + dense;
  out.formula = std::to_string(model.layers) + " attention + " + std::to_string(dense) + " dense-MLP all-reduces" +
                (model.moe ? " (its MoE layers end in the MoE combine)" : "") + " = " + std::to_string(out.count) +
                " per forward step";
  return out;
}

DerivedCount moeRoundsPerForwardStep(const ModelSpec& model) {
  DerivedCount out;
  if (!model.moe) {
    out.formula = "no experts: no MoE round";
    return out;
  }
  out.count = moeLayers(model);
  out.formula = model.moe->leadingDenseLayers > 0
                    ? std::to_string(model.layers) + " layers - " + std::to_string(model.moe->leadingDenseLayers) +
                          " leading dense = " + std::to_string(out.count) + " MoE layers, one dispatch + combine each"
                    : std::to_string(out.count) +
                          " layers, one dispatch + combine each (its dense layers are not known: every layer "
                          "counted as an MoE layer, an upper bound)";
  return out;
}

std::uint32_t kvHeadsPerRank(const ModelSpec& model, const ParallelLayout& layout) {
  validateLayout(layout);
  if (model.usesMla()) return 0;
  const std::uint32_t kv = model.kvHeads;
  const std::uint32_t tp = layout.tp;
  if (kv == 0) throw std::invalid_argument("model '" + model.name + "' has kv_heads = 0");
  if (tp <= kv) {
    if (kv % tp != 0)
      throw std::invalid_argument("model '" + model.name + "': tp=" + std::to_string(tp) +
                                  " does not divide kv_heads=" + std::to_string(kv));
    return kv / tp;
  }
  if (tp % kv != 0)
    throw std::invalid_argument("model '" + model.name + "': tp=" + std::to_string(tp) +
                                " is not a multiple of kv_heads=" + std::to_string(kv) +
                                " (KV heads can only be replicated evenly)");
  return 1;
}

std::uint64_t blocksForTokens(std::uint64_t tokens, std::uint32_t blockTokens) {
  requirePositive(blockTokens, "block_tokens");
  return (tokens + blockTokens - 1) / blockTokens;
}

DerivedSize kvBytesPerBlockPerLayer(const ModelSpec& model, const ParallelLayout& layout, std::uint32_t blockTokens) {
  requirePositive(blockTokens, "block_tokens");
  const Dtype kvDtype = model.kvDtype();
  DerivedSize out;
  if (model.usesMla()) {
    const std::uint64_t latent = model.mla->latentValues();
    out.bytes = std::uint64_t{blockTokens} * latent * dtypeBytes(kvDtype);
    out.formula = std::to_string(blockTokens) + " tokens x " + std::to_string(latent) + " latent (" +
                  std::to_string(model.mla->kvLoraRank) + " + " + std::to_string(model.mla->ropeHeadDim) +
                  " rope, MLA, not split by TP) x " + dtypeTerm(kvDtype) + equalsBytes(out.bytes);
    return out;
  }
  const std::uint32_t heads = kvHeadsPerRank(model, layout);
  out.bytes = 2ull * blockTokens * heads * model.headDim * dtypeBytes(kvDtype);
  out.formula = "2 (K,V) x " + std::to_string(blockTokens) + " tokens x " + std::to_string(heads) + " kv_heads/rank (" +
                std::to_string(model.kvHeads) + " / tp " + std::to_string(layout.tp) + ") x " +
                std::to_string(model.headDim) + " head_dim x " + dtypeTerm(kvDtype) + equalsBytes(out.bytes);
  return out;
}

DerivedSize kvBytesPerBlock(const ModelSpec& model, const ParallelLayout& layout, std::uint32_t blockTokens) {
  const DerivedSize perLayer = kvBytesPerBlockPerLayer(model, layout, blockTokens);
  DerivedSize out;
  out.bytes = perLayer.bytes * model.layers;
  out.formula = std::to_string(perLayer.bytes) + " B per layer x " + std::to_string(model.layers) + " layers" +
                equalsBytes(out.bytes);
  return out;
}

DerivedSize kvBytesPerRequest(const ModelSpec& model, const ParallelLayout& layout, std::uint32_t blockTokens,
                              std::uint64_t promptTokens) {
  requirePositive(promptTokens, "prompt tokens");
  const DerivedSize perBlock = kvBytesPerBlock(model, layout, blockTokens);
  const std::uint64_t blocks = blocksForTokens(promptTokens, blockTokens);
  DerivedSize out;
  out.bytes = blocks * perBlock.bytes;
  out.formula = "ceil(" + std::to_string(promptTokens) + " tokens / " + std::to_string(blockTokens) +
                ") = " + std::to_string(blocks) + " blocks x " + std::to_string(perBlock.bytes) + " B per block" +
                equalsBytes(out.bytes) + " per rank";
  return out;
}

DerivedSize moeDispatchBytesPerToken(const ModelSpec& model, Dtype dispatchDtype) {
  if (!model.moe) throw std::invalid_argument("model '" + model.name + "' has no MoE layers to dispatch to");
  constexpr std::uint64_t headerBytes = 16;  // DeepEP's per-token int4 source info
  constexpr std::uint64_t valuesPerScale = 128;
  const std::uint64_t hidden = model.hiddenSize;
  DerivedSize out;
  if (dispatchDtype == Dtype::fp8) {
    const std::uint64_t scales = (hidden + valuesPerScale - 1) / valuesPerScale;
    out.bytes = headerBytes + hidden + scales * 4;
    out.formula = "16 B header + " + std::to_string(hidden) + " hidden x 1 B (fp8) + " + std::to_string(scales) +
                  " scales x 4 B (fp32, 1 per 128 values)" + equalsBytes(out.bytes);
  } else if (dispatchDtype == Dtype::bf16) {
    out.bytes = headerBytes + hidden * 2;
    out.formula = "16 B header + " + std::to_string(hidden) + " hidden x 2 B (bf16)" + equalsBytes(out.bytes);
  } else {
    throw std::invalid_argument("MoE dispatch is modelled for fp8 and bf16 only, not " +
                                std::string(dtypeName(dispatchDtype)));
  }
  return out;
}

DerivedSize moeCombineBytesPerToken(const ModelSpec& model) {
  if (!model.moe) throw std::invalid_argument("model '" + model.name + "' has no MoE layers to combine from");
  DerivedSize out;
  out.bytes = std::uint64_t{model.hiddenSize} * 2;
  out.formula = std::to_string(model.hiddenSize) + " hidden x 2 B (bf16)" + equalsBytes(out.bytes);
  return out;
}

}  // namespace fabscope::model
