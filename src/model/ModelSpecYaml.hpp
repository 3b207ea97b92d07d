#pragma once
// Builds a ModelSpec / ParallelLayout from a scenario's YAML node. Errors carry
// the YAML position so the scenario parser can point at the offending line.
//
//   model: llama3-70b                      # a preset by name
//   model: {preset: llama3-70b, kv_dtype: fp8}   # a preset plus overrides
//   model:                                 # fully explicit
//     name: my-model
//     hidden_size: 8192
//     layers: 80
//     attention_heads: 64
//     kv_heads: 8
//     head_dim: 128          # default hidden_size / attention_heads
//     dtype: bf16            # default bf16
//     kv_dtype: fp8          # default = dtype
//     mla: {kv_lora_rank: 512, rope_head_dim: 64}
//     moe: {experts: 256, shared_experts: 1, experts_per_token: 8, intermediate_size: 2048}
//
// Hugging Face config.json spellings are accepted as aliases
// (num_hidden_layers, num_attention_heads, num_key_value_heads, ...).
#include <stdexcept>
#include <string>

#include <yaml-cpp/yaml.h>

#include "model/ModelSpec.hpp"

namespace fabscope::model {

class ModelSpecError : public std::runtime_error {
 public:
  // line/column are 1-based; 0 when the node has no position (built in code).
  ModelSpecError(const std::string& message, int line, int column, YAML::Node node = {});
  int line() const { return line_; }
  int column() const { return column_; }
  // The message without the "line L, column C: " prefix.
  const std::string& message() const { return message_; }
  // The node the error is about (scenario::positionOf names a --set value's option).
  const YAML::Node& node() const { return node_; }

 private:
  std::string message_;
  int line_;
  int column_;
  YAML::Node node_;
};

ModelSpec modelSpecFromYaml(const YAML::Node& node);

//   parallel: {tp: 8}
ParallelLayout parallelLayoutFromYaml(const YAML::Node& node);

}  // namespace fabscope::model
