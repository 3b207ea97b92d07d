// Size derivations against the numbers in the design (Llama-3-70B, DeepSeek-V3).
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "model/ModelSpec.hpp"
#include "model/ServingSizes.hpp"
#include "model/TrafficSizes.hpp"

namespace fm = fabscope::model;

namespace {
constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
}  // namespace

TEST(ModelPresets, PublishedConfigNumbers) {
  const auto& l70 = fm::findPreset("llama3-70b");
  EXPECT_EQ(l70.hiddenSize, 8192u);
  EXPECT_EQ(l70.layers, 80u);
  EXPECT_EQ(l70.attentionHeads, 64u);
  EXPECT_EQ(l70.kvHeads, 8u);
  EXPECT_EQ(l70.headDim, 128u);
  EXPECT_EQ(l70.dtype, fm::Dtype::bf16);

  const auto& l8 = fm::findPreset("llama3-8b");
  EXPECT_EQ(l8.hiddenSize, 4096u);
  EXPECT_EQ(l8.layers, 32u);
  EXPECT_EQ(l8.kvHeads, 8u);

  const auto& ds = fm::findPreset("deepseek-v3");
  EXPECT_EQ(ds.hiddenSize, 7168u);
  EXPECT_EQ(ds.layers, 61u);
  ASSERT_TRUE(ds.mla.has_value());
  EXPECT_EQ(ds.mla->latentValues(), 576u);
  ASSERT_TRUE(ds.moe.has_value());
  EXPECT_EQ(ds.moe->routedExperts, 256u);
  EXPECT_EQ(ds.moe->expertsPerToken, 8u);
}

TEST(ModelPresets, UnknownNameListsKnownPresets) {
  try {
    fm::findPreset("llama2-70b");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("llama2-70b"), std::string::npos) << what;
    for (const char* known : {"llama3-8b", "llama3-70b", "deepseek-v3"})
      EXPECT_NE(what.find(known), std::string::npos) << what;
  }
}

TEST(Dtypes, BytesAndSpellings) {
  EXPECT_EQ(fm::dtypeBytes(fm::Dtype::bf16), 2u);
  EXPECT_EQ(fm::dtypeBytes(fm::Dtype::fp16), 2u);
  EXPECT_EQ(fm::dtypeBytes(fm::Dtype::fp8), 1u);
  EXPECT_EQ(fm::dtypeBytes(fm::Dtype::fp32), 4u);
  EXPECT_EQ(fm::parseDtype("BFloat16"), fm::Dtype::bf16);
  EXPECT_EQ(fm::parseDtype("e4m3"), fm::Dtype::fp8);
  EXPECT_FALSE(fm::parseDtype("int4").has_value());
}

TEST(AllReduceSizes, Llama70bDecodeAndPrefill) {
  const auto& m = fm::findPreset("llama3-70b");
  const auto b32 = fm::allReduceBytesForDecode(m, 32);
  EXPECT_EQ(b32.bytes, 512 * KiB);
  EXPECT_EQ(b32.formula, "32 tokens x 8192 hidden x 2 B (bf16) = 524288 B (512 KiB)");
  EXPECT_EQ(fm::allReduceBytesForDecode(m, 1).bytes, 16 * KiB);
  EXPECT_EQ(fm::allReduceBytesForDecode(m, 256).bytes, 4 * MiB);
  const auto chunk = fm::allReduceBytesForPrefill(m, 2048);
  EXPECT_EQ(chunk.bytes, 32 * MiB);
  EXPECT_NE(chunk.formula.find("(32 MiB)"), std::string::npos) << chunk.formula;
  EXPECT_THROW(fm::allReduceBytesForDecode(m, 0), std::invalid_argument);
}

TEST(AllReduceSizes, CountPerForwardStep) {
  const auto& m = fm::findPreset("llama3-70b");
  const auto c = fm::allReducesPerForwardStep(m, {8});
  EXPECT_EQ(c.count, 160u);
  EXPECT_EQ(c.formula, "80 attention + 80 dense-MLP all-reduces = 160 per forward step");
  EXPECT_EQ(fm::allReducesPerForwardStep(m, {1}).count, 0u);
  EXPECT_EQ(fm::moeRoundsPerForwardStep(m).count, 0u);
}

// The counts of the analysis' placement (serving/placement.py): DeepSeek-V3 at TP 8 has
// 61 attention all-reduces + 3 for its leading dense MLPs, and 58 MoE rounds (its MoE
// layers end in the combine, not in an all-reduce); with DP attention (tp 1) 0 + 58.
TEST(AllReduceSizes, MoeModelCountsAttentionDenseLayersAndMoeRounds) {
  const auto& m = fm::findPreset("deepseek-v3");
  EXPECT_EQ(fm::denseLayers(m), 3u);
  EXPECT_EQ(fm::moeLayers(m), 58u);
  const auto tp8 = fm::allReducesPerForwardStep(m, {8});
  EXPECT_EQ(tp8.count, 64u);
  EXPECT_EQ(tp8.formula,
            "61 attention + 3 dense-MLP all-reduces (its MoE layers end in the MoE combine) = 64 per forward step");
  EXPECT_EQ(fm::allReducesPerForwardStep(m, {1}).count, 0u);
  const auto rounds = fm::moeRoundsPerForwardStep(m);
  EXPECT_EQ(rounds.count, 58u);
  EXPECT_EQ(rounds.formula, "61 layers - 3 leading dense = 58 MoE layers, one dispatch + combine each");
  // A model with experts whose dense layers are not known: every layer an MoE layer, said as an upper bound.
  auto unknown = m;
  unknown.moe->leadingDenseLayers = 0;
  EXPECT_EQ(fm::allReducesPerForwardStep(unknown, {8}).count, 61u);
  EXPECT_EQ(fm::moeRoundsPerForwardStep(unknown).count, 61u);
  EXPECT_NE(fm::moeRoundsPerForwardStep(unknown).formula.find("an upper bound"), std::string::npos);
}

TEST(KvSizes, Llama70bTp8Block16) {
  const auto& m = fm::findPreset("llama3-70b");
  const fm::ParallelLayout tp8{8};
  EXPECT_EQ(fm::kvHeadsPerRank(m, tp8), 1u);
  const auto perLayer = fm::kvBytesPerBlockPerLayer(m, tp8, 16);
  EXPECT_EQ(perLayer.bytes, 8 * KiB);
  EXPECT_EQ(perLayer.formula,
            "2 (K,V) x 16 tokens x 1 kv_heads/rank (8 / tp 8) x 128 head_dim x 2 B (bf16) = 8192 B (8 KiB)");
  EXPECT_EQ(fm::kvBytesPerBlock(m, tp8, 16).bytes, 640 * KiB);
  const auto request = fm::kvBytesPerRequest(m, tp8, 16, 8192);
  EXPECT_EQ(request.bytes, 320 * MiB);
  EXPECT_NE(request.formula.find("512 blocks"), std::string::npos) << request.formula;
}

TEST(KvSizes, PartialLastBlockCountsWhole) {
  const auto& m = fm::findPreset("llama3-70b");
  EXPECT_EQ(fm::blocksForTokens(17, 16), 2u);
  EXPECT_EQ(fm::kvBytesPerRequest(m, {8}, 16, 17).bytes, 2 * 640 * KiB);
}

TEST(KvSizes, HeadsReplicateWhenTpExceedsKvHeads) {
  const auto& m = fm::findPreset("llama3-70b");
  EXPECT_EQ(fm::kvHeadsPerRank(m, {1}), 8u);
  EXPECT_EQ(fm::kvHeadsPerRank(m, {2}), 4u);
  EXPECT_EQ(fm::kvHeadsPerRank(m, {16}), 1u);
  EXPECT_EQ(fm::kvBytesPerBlockPerLayer(m, {16}, 16).bytes, 8 * KiB);
  EXPECT_THROW(fm::kvHeadsPerRank(m, {3}), std::invalid_argument);
  EXPECT_THROW(fm::kvHeadsPerRank(m, {12}), std::invalid_argument);
  EXPECT_THROW(fm::kvHeadsPerRank(m, {0}), std::invalid_argument);
}

TEST(KvSizes, Fp8KvCacheHalvesTheBlock) {
  auto m = fm::findPreset("llama3-70b");
  m.kvCacheDtype = fm::Dtype::fp8;
  EXPECT_EQ(fm::kvBytesPerBlockPerLayer(m, {8}, 16).bytes, 4 * KiB);
  // All-reduce payloads stay in the activation dtype.
  EXPECT_EQ(fm::allReduceBytesForDecode(m, 32).bytes, 512 * KiB);
}

TEST(KvSizes, DeepSeekMlaIsNotSplitByTp) {
  const auto& m = fm::findPreset("deepseek-v3");
  const auto tp1 = fm::kvBytesPerBlockPerLayer(m, {1}, 16);
  const auto tp8 = fm::kvBytesPerBlockPerLayer(m, {8}, 16);
  EXPECT_EQ(tp1.bytes, 16u * 576 * 2);
  EXPECT_EQ(tp8.bytes, tp1.bytes);
  EXPECT_NE(tp8.formula.find("576 latent (512 + 64 rope"), std::string::npos) << tp8.formula;
  EXPECT_EQ(fm::kvBytesPerBlock(m, {8}, 16).bytes, 16u * 576 * 2 * 61);
}

TEST(MoeSizes, DeepEpDispatchPerToken) {
  const auto& m = fm::findPreset("deepseek-v3");
  EXPECT_EQ(fm::moeDispatchBytesPerToken(m, fm::Dtype::fp8).bytes, 7408u);
  EXPECT_EQ(fm::moeDispatchBytesPerToken(m, fm::Dtype::bf16).bytes, 16u + 7168 * 2);
  EXPECT_THROW(fm::moeDispatchBytesPerToken(fm::findPreset("llama3-8b"), fm::Dtype::fp8), std::invalid_argument);
}

TEST(HumanBytes, WholeAndFractionalUnits) {
  EXPECT_EQ(fm::humanBytes(7408), "7.23 KiB");
  EXPECT_EQ(fm::humanBytes(512), "512 B");
  EXPECT_EQ(fm::humanBytes(512 * KiB), "512 KiB");
  EXPECT_EQ(fm::humanBytes(320 * MiB), "320 MiB");
  EXPECT_EQ(fm::humanBytes(1536 * KiB), "1.50 MiB");
  EXPECT_EQ(fm::humanBytes(0), "0 B");
}

TEST(ModelValidation, RejectsInconsistentShapes) {
  fm::ModelSpec m = fm::findPreset("llama3-8b");
  m.kvHeads = 5;
  EXPECT_THROW(m.validate(), std::invalid_argument);
  m = fm::findPreset("llama3-8b");
  m.layers = 0;
  EXPECT_THROW(m.validate(), std::invalid_argument);
}

// The sizes a scenario's `sizes: {derive: ...}` gets, from the model layer: each with
// the mapping key it came from (where the loader points an error) and its formula.
TEST(ServingSizes, DerivationsGiveSizesWithTheirKeys) {
  const auto& v3 = fm::findPreset("deepseek-v3");
  fm::SizeDerivationRequest moe;
  moe.derive = "moe-dispatch";
  moe.tokens = {1, 128};
  const auto dispatch = fm::deriveSizes(v3, {8}, moe);
  ASSERT_EQ(dispatch.size(), 2u);
  EXPECT_EQ(dispatch[0].size.bytes, 7408u);
  EXPECT_EQ(dispatch[1].size.bytes, 128u * 7408u);
  EXPECT_EQ(dispatch[1].key, "tokens");
  EXPECT_EQ(dispatch[1].size.formula.rfind("128 tokens x (", 0), 0u) << dispatch[1].size.formula;

  const auto& llama = fm::findPreset("llama3-70b");
  fm::SizeDerivationRequest tp;
  tp.derive = "tp-allreduce";
  tp.decodeBatches = {1, 32};
  tp.prefillChunks = {2048};
  const auto allreduce = fm::deriveSizes(llama, {8}, tp);
  ASSERT_EQ(allreduce.size(), 3u);
  EXPECT_EQ(allreduce[1].size.bytes, 512u * KiB);
  EXPECT_EQ(allreduce[1].key, "decode_batch");
  EXPECT_EQ(allreduce[2].size.bytes, 32u * MiB);
  EXPECT_EQ(allreduce[2].key, "prefill_chunk");

  fm::SizeDerivationRequest kv;
  kv.derive = "kv-request";
  kv.blockTokens = 16;
  kv.promptTokens = {8192};
  EXPECT_EQ(fm::deriveSizes(llama, {8}, kv).front().size.bytes, fm::kvBytesPerRequest(llama, {8}, 16, 8192).bytes);
}

TEST(ServingSizes, AMissingKeyOrAnUnknownDerivationIsSaid) {
  const auto& llama = fm::findPreset("llama3-70b");
  const auto refused = [&](const fm::SizeDerivationRequest& r) {
    try {
      fm::deriveSizes(llama, {8}, r);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  // Built field by field: designated initializers leaving the vectors out warn under -Wextra.
  const auto request = [](std::string derive, std::uint32_t blockTokens = 0) {
    fm::SizeDerivationRequest r;
    r.derive = std::move(derive);
    r.blockTokens = blockTokens;
    return r;
  };
  EXPECT_EQ(refused(request("kv-request", 16)), "'derive: kv-request' needs 'prompt_tokens'");
  EXPECT_EQ(refused(request("kv-block")), "'derive: kv-block' needs 'block_tokens'");
  EXPECT_EQ(refused(request("tp-allreduce")), "'derive: tp-allreduce' needs decode_batch and/or prefill_chunk");
  EXPECT_EQ(refused(request("moe-dispatch-token")), "'derive: moe-dispatch-token' needs 'tokens'");
  EXPECT_EQ(refused(request("kv-page")), "unknown size derivation 'kv-page'");
}
