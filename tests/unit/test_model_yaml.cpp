// ModelSpec from YAML: presets, overrides, explicit fields, errors with marks.
#include <gtest/gtest.h>

#include "model/ModelSpecYaml.hpp"
#include "model/TrafficSizes.hpp"

namespace fm = fabscope::model;

namespace {

fm::ModelSpec parseModel(const std::string& text) { return fm::modelSpecFromYaml(YAML::Load(text)["model"]); }

// Parses and returns the error; fails the test when parsing succeeds.
fm::ModelSpecError parseError(const std::string& text) {
  try {
    parseModel(text);
  } catch (const fm::ModelSpecError& e) {
    return e;
  }
  ADD_FAILURE() << "expected ModelSpecError for:\n" << text;
  return fm::ModelSpecError("none", 0, 0);
}

}  // namespace

TEST(ModelYaml, PresetByScalarName) { EXPECT_EQ(parseModel("model: llama3-70b\n"), fm::findPreset("llama3-70b")); }

TEST(ModelYaml, PresetWithOverrides) {
  const auto m = parseModel("model:\n  preset: llama3-70b\n  kv_dtype: fp8\n");
  EXPECT_EQ(m.hiddenSize, 8192u);
  EXPECT_EQ(m.kvDtype(), fm::Dtype::fp8);
  EXPECT_EQ(m.dtype, fm::Dtype::bf16);
  EXPECT_EQ(m.name, "llama3-70b (modified)");
  EXPECT_EQ(fm::kvBytesPerBlockPerLayer(m, {8}, 16).bytes, 4096u);
}

TEST(ModelYaml, ExplicitFieldsWithHuggingFaceAliases) {
  const auto m = parseModel(
      "model:\n"
      "  name: my-70b\n"
      "  hidden_size: 8192\n"
      "  num_hidden_layers: 80\n"
      "  num_attention_heads: 64\n"
      "  num_key_value_heads: 8\n"
      "  torch_dtype: bfloat16\n");
  EXPECT_EQ(m.name, "my-70b");
  EXPECT_EQ(m.layers, 80u);
  EXPECT_EQ(m.headDim, 128u);  // derived: 8192 / 64
  EXPECT_EQ(fm::allReduceBytesForDecode(m, 32).bytes, 512u * 1024);
}

TEST(ModelYaml, ExplicitMlaAndMoe) {
  const auto m = parseModel(
      "model:\n"
      "  hidden_size: 7168\n"
      "  layers: 61\n"
      "  attention_heads: 128\n"
      "  mla: {kv_lora_rank: 512, qk_rope_head_dim: 64}\n"
      "  moe: {experts: 256, shared_experts: 1, experts_per_token: 8, intermediate_size: 2048}\n");
  ASSERT_TRUE(m.mla.has_value());
  EXPECT_EQ(m.mla->latentValues(), 576u);
  EXPECT_EQ(fm::moeDispatchBytesPerToken(m, fm::Dtype::fp8).bytes, 7408u);
}

TEST(ModelYaml, UnknownPresetPointsAtTheValue) {
  const auto e = parseError("# comment\nmodel:\n  preset: llama9\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 11);
  const std::string what = e.what();
  EXPECT_EQ(what.rfind("line 3, column 11: ", 0), 0u) << what;
  EXPECT_NE(what.find("llama3-70b"), std::string::npos) << what;
}

TEST(ModelYaml, BadIntegerPointsAtTheValue) {
  const auto e = parseError("model:\n  preset: llama3-8b\n  layers: many\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 11);
  EXPECT_NE(e.message().find("model.layers"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("'many'"), std::string::npos) << e.message();
}

TEST(ModelYaml, NegativeAndZeroRejected) {
  EXPECT_NE(parseError("model: {preset: llama3-8b, layers: -3}\n").message().find("positive integer"),
            std::string::npos);
  EXPECT_NE(parseError("model: {preset: llama3-8b, layers: 0}\n").message().find("at least 1"), std::string::npos);
}

TEST(ModelYaml, UnknownKeyPointsAtTheKey) {
  const auto e = parseError("model:\n  preset: llama3-8b\n  hiden_size: 4096\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 3);
  EXPECT_NE(e.message().find("hiden_size"), std::string::npos);
  EXPECT_NE(e.message().find("hidden_size"), std::string::npos);
}

TEST(ModelYaml, MissingRequiredFieldNamesIt) {
  const auto e = parseError("model:\n  hidden_size: 4096\n  layers: 32\n  attention_heads: 32\n");
  EXPECT_NE(e.message().find("kv_heads"), std::string::npos) << e.message();
  EXPECT_EQ(e.line(), 2);
}

TEST(ModelYaml, AliasGivenTwiceIsAnError) {
  const auto e = parseError("model:\n  preset: llama3-8b\n  layers: 32\n  num_layers: 32\n");
  EXPECT_NE(e.message().find("same field"), std::string::npos) << e.message();
}

TEST(ModelYaml, BadDtypeListsChoices) {
  const auto e = parseError("model: {preset: llama3-8b, dtype: int3}\n");
  EXPECT_NE(e.message().find("bf16, fp16, fp8, fp32"), std::string::npos) << e.message();
}

TEST(ModelYaml, InconsistentShapeReportedAtModel) {
  const auto e = parseError("model:\n  preset: llama3-8b\n  kv_heads: 5\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(e.message().find("multiple of kv_heads"), std::string::npos) << e.message();
}

TEST(ParallelYaml, TensorParallelSize) {
  EXPECT_EQ(fm::parallelLayoutFromYaml(YAML::Load("{tp: 8}")).tp, 8u);
  EXPECT_EQ(fm::parallelLayoutFromYaml(YAML::Node()).tp, 1u);
  EXPECT_THROW(fm::parallelLayoutFromYaml(YAML::Load("{tp: 0}")), fm::ModelSpecError);
  EXPECT_THROW(fm::parallelLayoutFromYaml(YAML::Load("{pp: 2}")), fm::ModelSpecError);
}
