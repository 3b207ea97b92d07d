#include "model/ModelSpecYaml.hpp"

#include <charconv>
#include <limits>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace fabscope::model {

namespace {

std::string positionPrefix(int line, int column) {
  if (line <= 0) return {};
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
}

[[noreturn]] void fail(const YAML::Node& at, const std::string& message) {
  const YAML::Mark mark = at.Mark();
  const bool known = !mark.is_null();
  throw ModelSpecError(message, known ? mark.line + 1 : 0, known ? mark.column + 1 : 0, at);
}

// One logical field and the spellings it may appear under.
struct FieldSpelling {
  const char* field;
  std::vector<const char*> spellings;
};

class MapReader {
 public:
  MapReader(const YAML::Node& map, std::string context, std::vector<FieldSpelling> fields)
      : map_(map), context_(std::move(context)), fields_(std::move(fields)) {
    if (!map_.IsMap()) fail(map_, context_ + ": expected a mapping");
    for (const auto& entry : map_) {
      const std::string key = entry.first.Scalar();
      if (!isKnown(key)) fail(entry.first, context_ + ": unknown key '" + key + "'; known keys: " + knownKeys());
    }
  }

  // The node for `field` under whichever spelling was used; nullopt when
  // absent. Two spellings of the same field is an error.
  std::optional<YAML::Node> find(const char* field) const {
    std::optional<YAML::Node> found;
    std::string usedSpelling;
    for (const auto& f : fields_) {
      if (std::string(f.field) != field) continue;
      for (const char* spelling : f.spellings) {
        for (const auto& entry : map_) {
          if (entry.first.Scalar() != spelling) continue;
          if (found)
            fail(entry.first,
                 context_ + ": '" + spelling + "' and '" + usedSpelling + "' name the same field; give it once");
          found = entry.second;
          usedSpelling = spelling;
        }
      }
    }
    return found;
  }

  const YAML::Node& node() const { return map_; }
  const std::string& context() const { return context_; }

 private:
  bool isKnown(const std::string& key) const {
    for (const auto& f : fields_)
      for (const char* s : f.spellings)
        if (key == s) return true;
    return false;
  }
  std::string knownKeys() const {
    std::string out;
    for (const auto& f : fields_) {
      if (!out.empty()) out += ", ";
      out += f.spellings.front();
    }
    return out;
  }

  YAML::Node map_;
  std::string context_;
  std::vector<FieldSpelling> fields_;
};

std::uint32_t positiveInteger(const YAML::Node& value, const std::string& what) {
  if (!value.IsScalar()) fail(value, what + ": expected a positive integer");
  const std::string& text = value.Scalar();
  std::uint64_t parsed = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    fail(value, what + ": expected a positive integer, got '" + text + "'");
  if (parsed == 0) fail(value, what + ": must be at least 1, got 0");
  if (parsed > std::numeric_limits<std::uint32_t>::max()) fail(value, what + ": " + text + " is too large");
  return static_cast<std::uint32_t>(parsed);
}

Dtype dtypeValue(const YAML::Node& value, const std::string& what) {
  if (!value.IsScalar()) fail(value, what + ": expected a dtype (" + knownDtypeNames() + ")");
  const auto dtype = parseDtype(value.Scalar());
  if (!dtype) fail(value, what + ": unknown dtype '" + value.Scalar() + "'; expected one of " + knownDtypeNames());
  return *dtype;
}

void readInteger(const MapReader& reader, const char* field, std::uint32_t& target) {
  if (const auto v = reader.find(field)) target = positiveInteger(*v, reader.context() + "." + field);
}

MlaSpec readMla(const YAML::Node& node, const MlaSpec& base) {
  const MapReader reader(
      node, "model.mla",
      {{"kv_lora_rank", {"kv_lora_rank"}}, {"rope_head_dim", {"rope_head_dim", "qk_rope_head_dim"}}});
  MlaSpec mla = base;
  readInteger(reader, "kv_lora_rank", mla.kvLoraRank);
  readInteger(reader, "rope_head_dim", mla.ropeHeadDim);
  if (mla.kvLoraRank == 0) fail(node, "model.mla: kv_lora_rank is required");
  return mla;
}

MoeSpec readMoe(const YAML::Node& node, const MoeSpec& base) {
  const MapReader reader(node, "model.moe",
                         {{"experts", {"experts", "n_routed_experts"}},
                          {"shared_experts", {"shared_experts", "n_shared_experts"}},
                          {"experts_per_token", {"experts_per_token", "num_experts_per_tok"}},
                          {"intermediate_size", {"intermediate_size", "moe_intermediate_size"}}});
  MoeSpec moe = base;
  readInteger(reader, "experts", moe.routedExperts);
  if (const auto v = reader.find("shared_experts")) {
    // Zero shared experts is a real configuration (Mixtral), so 0 is allowed here.
    moe.sharedExperts = (v->IsScalar() && v->Scalar() == "0") ? 0 : positiveInteger(*v, "model.moe.shared_experts");
  }
  readInteger(reader, "experts_per_token", moe.expertsPerToken);
  readInteger(reader, "intermediate_size", moe.expertIntermediate);
  if (moe.routedExperts == 0) fail(node, "model.moe: experts is required");
  if (moe.expertsPerToken == 0) fail(node, "model.moe: experts_per_token is required");
  return moe;
}

}  // namespace

ModelSpecError::ModelSpecError(const std::string& message, int line, int column, YAML::Node node)
    : std::runtime_error(positionPrefix(line, column) + message),
      message_(message),
      line_(line),
      column_(column),
      node_(std::move(node)) {}

ModelSpec modelSpecFromYaml(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) fail(node, "model: expected a preset name or a mapping");
  if (node.IsScalar()) {
    try {
      return findPreset(node.Scalar());
    } catch (const std::invalid_argument& e) {
      fail(node, std::string("model: ") + e.what());
    }
  }
  const MapReader reader(node, "model",
                         {{"preset", {"preset"}},
                          {"name", {"name"}},
                          {"hidden_size", {"hidden_size", "hidden"}},
                          {"layers", {"layers", "num_layers", "num_hidden_layers"}},
                          {"attention_heads", {"attention_heads", "num_attention_heads"}},
                          {"kv_heads", {"kv_heads", "num_key_value_heads"}},
                          {"head_dim", {"head_dim"}},
                          {"dtype", {"dtype", "torch_dtype"}},
                          {"kv_dtype", {"kv_dtype", "kv_cache_dtype"}},
                          {"mla", {"mla"}},
                          {"moe", {"moe"}}});

  ModelSpec spec;
  const auto preset = reader.find("preset");
  if (preset) {
    if (!preset->IsScalar()) fail(*preset, "model.preset: expected a preset name");
    try {
      spec = findPreset(preset->Scalar());
    } catch (const std::invalid_argument& e) {
      fail(*preset, std::string("model.preset: ") + e.what());
    }
  } else {
    spec.name = "custom";
    for (const char* required : {"hidden_size", "layers", "attention_heads"})
      if (!reader.find(required).has_value())
        fail(node, std::string("model: '") + required +
                       "' is required when no preset is named (known presets: " + knownPresetNames() + ")");
    if (!reader.find("kv_heads") && !reader.find("mla"))
      fail(node, "model: 'kv_heads' is required for a model without 'mla'");
  }

  if (const auto v = reader.find("name")) {
    if (!v->IsScalar() || v->Scalar().empty()) fail(*v, "model.name: expected a non-empty string");
    spec.name = v->Scalar();
  } else if (preset.has_value() && node.size() > 1) {
    spec.name += " (modified)";  // overrides must not pass for the published model
  }
  readInteger(reader, "hidden_size", spec.hiddenSize);
  readInteger(reader, "layers", spec.layers);
  readInteger(reader, "attention_heads", spec.attentionHeads);
  readInteger(reader, "kv_heads", spec.kvHeads);
  if (const auto v = reader.find("head_dim")) {
    spec.headDim = positiveInteger(*v, "model.head_dim");
  } else if (!preset.has_value()) {
    if (spec.hiddenSize % spec.attentionHeads != 0)
      fail(node, "model: head_dim not given and hidden_size (" + std::to_string(spec.hiddenSize) +
                     ") is not a multiple of attention_heads (" + std::to_string(spec.attentionHeads) +
                     "); give head_dim");
    spec.headDim = spec.hiddenSize / spec.attentionHeads;
  }
  if (const auto v = reader.find("dtype")) spec.dtype = dtypeValue(*v, "model.dtype");
  if (const auto v = reader.find("kv_dtype")) spec.kvCacheDtype = dtypeValue(*v, "model.kv_dtype");
  if (const auto v = reader.find("mla")) spec.mla = readMla(*v, spec.mla.value_or(MlaSpec{}));
  if (const auto v = reader.find("moe")) spec.moe = readMoe(*v, spec.moe.value_or(MoeSpec{}));
  if (spec.mla && spec.kvHeads == 0) spec.kvHeads = spec.attentionHeads;

  try {
    spec.validate();
  } catch (const std::invalid_argument& e) {
    fail(node, e.what());
  }
  return spec;
}

ParallelLayout parallelLayoutFromYaml(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return ParallelLayout{};
  const MapReader reader(node, "parallel", {{"tp", {"tp", "tensor_parallel"}}});
  ParallelLayout layout;
  readInteger(reader, "tp", layout.tp);
  return layout;
}

}  // namespace fabscope::model
