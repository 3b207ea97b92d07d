#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "model/ModelSpecYaml.hpp"
#include "model/ServingSizes.hpp"
#include "scenario/Scenario.hpp"
#include "scenario/TestSource.hpp"
#include "scenario/Units.hpp"

namespace fabscope::scenario {
namespace {

const std::vector<std::string> topKeys = {"name",          "description",
                                          "criteria",      "seed",
                                          "hdf5",          "max_memory_per_rank",
                                          "budget",        "control_timeout",
                                          "control_grace", "transports",
                                          "model",         "parallel",
                                          "defaults",      "tests"};
const std::vector<std::string> commonKeys = {"name",    "kind",       "sizes",   "iterations", "warmup",
                                             "timeout", "transport",  "memory",  "conditions", "ranks",
                                             "roles",   "load_bytes", "repeats", "budget"};
const std::vector<std::string> runLevelOverrideKeys = {"seed", "hdf5", "max_memory_per_rank"};
constexpr double maxTimeoutSeconds = 24 * 3600;
// A value given with --set is parsed on its own, so its marks are positions in
// the option's text, not in the file ("smoke.yaml:1:1" would point at the
// file's first line). Each of its nodes carries the option in its YAML tag
// instead (tags are read nowhere else), and positionOf names the option: the
// same for the loader's checks, ParamReader's and each kind's own.
const std::string setOptionTag = "tag:fabscope,set:";

void markAsSetOption(YAML::Node node, const std::string& where) {
  node.SetTag(setOptionTag + where);
  if (node.IsMap()) {
    for (auto entry : node) {
      markAsSetOption(entry.first, where);
      markAsSetOption(entry.second, where);
    }
  } else if (node.IsSequence()) {
    for (auto item : node) markAsSetOption(item, where);
  }
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// The kinds a scenario may name, all of them or those that rotate groups.
std::string kindNames(const ScenarioRules& rules, bool onlyGroupRotation = false) {
  std::vector<std::string> names;
  for (const auto& [name, kind] : rules.kinds)
    if (!onlyGroupRotation || kind.groupRotation) names.push_back(name);
  return joined(names);
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The first byte that is not UTF-8, as (line, column) 1-based; (0, 0) if all is well.
std::pair<int, int> firstNonUtf8(const std::string& text) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (length == 0 || i + length > text.size()) return {line, column};
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return {line, column};
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += length;
  }
  return {0, 0};
}

class Loader {
 public:
  Loader(std::string file, const ScenarioRules& rules) : file_(std::move(file)), rules_(rules) {}

  // A time budget: a duration such as 20m, above zero.
  double budgetOf(const YAML::Node& n) const {
    if (!n.IsScalar()) fail(n, "'budget' must be a duration such as 20m");
    double seconds = 0;
    try {
      seconds = parseDurationSeconds(n.Scalar());
    } catch (const std::invalid_argument& e) {
      fail(n, e.what());
    }
    if (seconds <= 0) fail(n, "'budget' must be above zero");
    return seconds;
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& message) const {
    throw ScenarioError(positionOf(file_, node) + ": " + message);
  }

  // A deadline (a test's timeout, the control plane's bounds): a duration no
  // longer than 24 hours.
  double deadlineOf(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, "'" + key + "' must be a duration such as 30s");
    double seconds = 0;
    try {
      seconds = parseDurationSeconds(n.Scalar());
    } catch (const std::invalid_argument& e) {
      fail(n, e.what());
    }
    if (seconds > maxTimeoutSeconds)
      fail(n, "'" + key + "' is longer than 24h; give a deadline a person would wait for");
    return seconds;
  }

  Scenario load(const std::string& text, const std::vector<std::string>& overrides) {
    Scenario scenario;
    scenario.file = file_;
    scenario.text = text;
    scenario.overrides = overrides;
    const YAML::Node root = parseRoot(text);
    checkKeys(root);
    if (!root.IsMap()) {
      if (root.IsNull())
        throw ScenarioError(file_ + ":1:1: the scenario is empty; expected a mapping with a 'tests:' list");
      fail(root, "expected a mapping with keys " + joined(topKeys));
    }
    for (const auto& entry : root) {
      const auto key = entry.first.Scalar();
      if (!contains(topKeys, key)) fail(entry.first, "unknown key '" + key + "'; expected one of: " + joined(topKeys));
    }
    readRunSettings(root, scenario);

    const YAML::Node defaults = root["defaults"] ? root["defaults"] : YAML::Node(YAML::NodeType::Map);
    if (!defaults.IsMap()) fail(defaults, "'defaults' must be a mapping of test keys");
    for (const auto& entry : defaults) {
      const auto key = entry.first.Scalar();
      if (key == "name" || key == "kind" || !contains(commonKeys, key))
        fail(entry.first,
             "unknown key '" + key +
                 "' in defaults; expected one of: sizes, iterations, "
                 "warmup, timeout, transport, memory, conditions, ranks, roles, load_bytes, repeats, budget");
    }

    const YAML::Node tests = root["tests"];
    if (!tests) throw ScenarioError(file_ + ":1:1: the scenario has no 'tests:' list");
    if (!tests.IsSequence() || tests.size() == 0) fail(tests, "'tests' must be a non-empty list of tests");

    applyOverrides(scenario, tests, overrides);

    model_ = root["model"] ? root["model"] : YAML::Node(YAML::NodeType::Undefined);
    parallel_ = root["parallel"] ? root["parallel"] : YAML::Node(YAML::NodeType::Undefined);
    if (model_) checkModel(model_, parallel_);
    readTests(tests, defaults, scenario);
    return scenario;
  }

  // The document, or where it is not UTF-8 or not YAML.
  YAML::Node parseRoot(const std::string& text) const {
    if (const auto [line, column] = firstNonUtf8(text); line > 0)
      throw ScenarioError(file_ + ":" + std::to_string(line) + ":" + std::to_string(column) +
                          ": the file is not UTF-8 text (save it as UTF-8)");
    try {
      return YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      throw ScenarioError(file_ + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                          ": YAML syntax error: " + e.msg);
    }
  }

  // The run-level keys: name, seed, hdf5, memory, control-plane bounds, budget, transports.
  void readRunSettings(const YAML::Node& root, Scenario& scenario) const {
    scenario.name = scalar(root, "name", "a scenario name", "unnamed");
    scenario.description = scalar(root, "description", "a text", "");
    scenario.criteria = scalar(root, "criteria", "a criteria file path", "");
    if (root["seed"]) {
      scenario.seed = static_cast<std::uint64_t>(integerOf(root["seed"], "seed", 0, INT64_MAX));
      scenario.seedGiven = true;
    }
    if (root["hdf5"]) scenario.hdf5Mode = choiceOf(root["hdf5"], "hdf5", {"auto", "parallel", "serial"});
    if (const YAML::Node m = root["max_memory_per_rank"]) {
      if (!m.IsScalar()) fail(m, "'max_memory_per_rank' must be a size such as 8GiB");
      try {
        scenario.maxMemoryPerRank = parseMemorySize(m.Scalar());
      } catch (const std::invalid_argument& e) {
        fail(m, e.what());
      }
    }

    // The control plane's own bounds (docs/scenarios.md "Control-plane deadlines").
    if (const YAML::Node n = root["control_timeout"]) scenario.controlTimeoutSeconds = deadlineOf(n, "control_timeout");
    if (const YAML::Node n = root["control_grace"]) scenario.controlGraceSeconds = deadlineOf(n, "control_grace");

    if (const YAML::Node b = root["budget"]) {
      scenario.budgetSeconds = budgetOf(b);
      scenario.budgetAt = positionOf(file_, b);
    }
    readTransportSettings(root["transports"], scenario.transports);
  }

  // Each test in order: its common keys, then its kind's own (read once into its config).
  void readTests(const YAML::Node& tests, const YAML::Node& defaults, Scenario& scenario) const {
    std::set<std::string> names;
    for (std::size_t i = 0; i < tests.size(); ++i) {
      TestSpec spec = parseTest(tests[i], defaults, i);
      spec.overrides = testOverrides_[i];
      if (!names.insert(spec.name).second)
        fail(tests[i], "two tests are named '" + spec.name + "'; names must be unique");
      const auto& kind = rules_.kinds.at(spec.kind);
      const int participants = spec.ranks > 0 ? spec.ranks : rules_.worldSize;
      if (spec.ranks > rules_.worldSize)
        fail(tests[i]["ranks"], "test '" + spec.name + "' asks for " + std::to_string(spec.ranks) +
                                    " ranks but the run has only " + std::to_string(rules_.worldSize));
      // The kind's own keys, read once into its config; its checks come first:
      // a wrong transport or key is the more useful message.
      if (kind.parse) spec.config = kind.parse(spec, TestSource{file_, tests[i], model_, parallel_, rules_.worldSize});
      if (spec.groups > 0 && !kind.groupRotation)
        fail(pick(tests[i], defaults, "roles")["groups"],
             "test '" + spec.name + "' (" + spec.kind + "): 'roles: {groups: ...}' rotates the measuring ranks of " +
                 "the collective kinds only (" + kindNames(rules_, true) + ")");
      if (participants < kind.minRanks)
        fail(tests[i], "test '" + spec.name + "' (" + spec.kind + ") needs at least " + std::to_string(kind.minRanks) +
                           " ranks; the run has " + std::to_string(participants) +
                           " (start more ranks with mpirun -np)");
      scenario.tests.push_back(std::move(spec));
    }
  }

 private:
  // Every mapping in the document: keys are plain words and appear once
  // (yaml-cpp itself accepts both a list as a key and a repeated key).
  void checkKeys(const YAML::Node& node) const {
    if (node.IsMap()) {
      std::map<std::string, int> seen;
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) fail(entry.first, "a key must be a plain word, not a list or mapping");
        const auto [it, fresh] = seen.emplace(entry.first.Scalar(), entry.first.Mark().line + 1);
        if (!fresh)
          fail(entry.first, "key '" + entry.first.Scalar() + "' appears twice in this mapping (first at line " +
                                std::to_string(it->second) + ")");
        checkKeys(entry.second);
      }
    } else if (node.IsSequence()) {
      for (const auto& item : node) checkKeys(item);
    }
  }

  void applyOverrides(Scenario& scenario, YAML::Node tests, const std::vector<std::string>& overrides) {
    testOverrides_.assign(tests.size(), {});
    for (const auto& text : overrides) {
      const auto eq = text.find('=');
      if (eq == std::string::npos || eq == 0)
        throw ScenarioError("--set " + text + ": expected key=value, e.g. --set iterations=100");
      std::string key = text.substr(0, eq);
      const std::string value = text.substr(eq + 1);
      const std::string where = "--set " + text;
      YAML::Node parsed;
      try {
        parsed = YAML::Load(value);
      } catch (const YAML::Exception& e) {
        throw ScenarioError(where + ": value is not valid YAML: " + e.msg);
      }
      markAsSetOption(parsed, where);
      if (key == "seed") {
        scenario.seed = static_cast<std::uint64_t>(integerOfOverride(parsed, where));
        scenario.seedGiven = true;
        continue;
      }
      if (key == "max_memory_per_rank") {
        try {
          scenario.maxMemoryPerRank = parseMemorySize(value);
        } catch (const std::invalid_argument& e) {
          throw ScenarioError(where + ": " + e.what());
        }
        continue;
      }
      if (key == "hdf5") {
        if (value != "auto" && value != "parallel" && value != "serial")
          throw ScenarioError(where + ": expected auto, parallel or serial");
        scenario.hdf5Mode = value;
        continue;
      }
      std::string onlyTest;
      if (const auto dot = key.find('.'); dot != std::string::npos) {
        onlyTest = key.substr(0, dot);
        key = key.substr(dot + 1);
      }
      if (key == "name" || key == "kind")
        throw ScenarioError(where + ": the test's '" + key + "' cannot be overridden");
      bool applied = false;
      for (std::size_t i = 0; i < tests.size(); ++i) {
        YAML::Node test = tests[i];
        if (!test.IsMap()) continue;
        const std::string testName = test["name"] ? test["name"].as<std::string>("") : "";
        if (!onlyTest.empty() && testName != onlyTest) continue;
        const std::string kind = test["kind"] ? test["kind"].as<std::string>("") : "";
        const auto k = rules_.kinds.find(kind);
        const bool allowed =
            contains(commonKeys, key) || (k != rules_.kinds.end() && contains(k->second.extraKeys, key));
        if (!allowed) {
          if (!onlyTest.empty())
            throw ScenarioError(where + ": test '" + onlyTest + "' (" + kind + ") has no key '" + key + "'");
          continue;
        }
        test[key] = parsed;
        testOverrides_[i][key] = where;
        applied = true;
      }
      if (!applied) {
        if (!onlyTest.empty()) throw ScenarioError(where + ": no test is named '" + onlyTest + "'");
        throw ScenarioError(where + ": no test in the scenario has a key '" + key + "'; common keys: " +
                            joined(commonKeys) + "; run-level keys: " + joined(runLevelOverrideKeys));
      }
    }
  }

  std::string scalar(const YAML::Node& parent, const std::string& key, const std::string& what,
                     const std::string& fallback) const {
    const YAML::Node n = parent[key];
    if (!n) return fallback;
    if (!n.IsScalar()) fail(n, "'" + key + "' must be " + what);
    return n.as<std::string>();
  }

  // transports: {NAME: {KEY: VALUE}}: each transport's keys (ScenarioRules::transportSettings), read by its
  // own parse step; every transport that has keys gets its settings, its defaults where none are given.
  void readTransportSettings(const YAML::Node& t, TransportSettingsByName& settings) const {
    const auto& rules = rules_.transportSettings;
    if (t && !t.IsMap()) {
      std::string example;
      for (const auto& [name, r] : rules) example += (example.empty() ? "" : ", ") + name + ": " + r.example;
      fail(t, "'transports' must be a mapping such as {" + example + "}");
    }
    for (const auto& entry : t ? t : YAML::Node(YAML::NodeType::Map)) {
      const auto name = entry.first.Scalar();
      const auto it = rules.find(name);
      if (it == rules.end()) {
        std::vector<std::string> names;
        for (const auto& [known, r] : rules) names.push_back(known);
        fail(entry.first, "unknown transport '" + name + "' under 'transports'; expected: " + joined(names));
      }
      const YAML::Node v = entry.second;
      if (!v.IsMap()) fail(v, "'transports." + name + "' must be a mapping such as " + it->second.example);
      for (const auto& key : v)
        if (!contains(it->second.keys, key.first.Scalar()))
          fail(key.first, "unknown key '" + key.first.Scalar() + "' under 'transports." + name +
                              "'; expected: " + joined(it->second.keys));
      settings[name] = it->second.parse(TransportSource(file_, name, v));
    }
    for (const auto& [name, r] : rules)
      if (!settings.contains(name))
        settings[name] = r.parse(TransportSource(file_, name, YAML::Node(YAML::NodeType::Map)));
  }

  std::int64_t integerOf(const YAML::Node& n, const std::string& key, std::int64_t min, std::int64_t max) const {
    std::int64_t v = 0;
    if (!n.IsScalar() || !YAML::convert<std::int64_t>::decode(n, v))
      fail(n, "'" + key + "' must be a whole number, got '" +
                  (n.IsScalar() ? n.Scalar() : std::string("a list or mapping")) + "'");
    if (v < min || v > max)
      fail(n,
           "'" + key + "' is " + std::to_string(v) + "; expected " + std::to_string(min) + ".." + std::to_string(max));
    return v;
  }

  std::int64_t integerOfOverride(const YAML::Node& n, const std::string& where) const {
    std::int64_t v = 0;
    if (!n.IsScalar() || !YAML::convert<std::int64_t>::decode(n, v) || v < 0)
      throw ScenarioError(where + ": expected a non-negative whole number");
    return v;
  }

  std::string choiceOf(const YAML::Node& n, const std::string& key, const std::vector<std::string>& allowed) const {
    if (!n.IsScalar()) fail(n, "'" + key + "' must be one of: " + joined(allowed));
    const auto v = n.as<std::string>();
    if (!contains(allowed, v)) fail(n, "'" + key + "' is '" + v + "'; expected one of: " + joined(allowed));
    return v;
  }

  // The test's own value, else the defaults' value.
  YAML::Node pick(const YAML::Node& test, const YAML::Node& defaults, const std::string& key) const {
    if (test[key]) return test[key];
    if (defaults[key]) return defaults[key];
    return YAML::Node(YAML::NodeType::Undefined);
  }

  void checkModel(const YAML::Node& modelNode, const YAML::Node& parallelNode) const {
    try {
      model::modelSpecFromYaml(modelNode);
      if (parallelNode) model::parallelLayoutFromYaml(parallelNode);
    } catch (const model::ModelSpecError& e) {
      throw ScenarioError(positionOf(file_, e.node(), modelNode) + ": " + e.message());
    }
  }

  // sizes: {derive: tp-allreduce, decode_batch: [1, 32], prefill_chunk: [2048]}
  //        {derive: kv-block-layer | kv-block, block_tokens: 16}
  //        {derive: kv-request, block_tokens: 16, prompt_tokens: [8192]}
  //        {derive: moe-dispatch | moe-dispatch-token, tokens: [1, 128]}
  // with the scenario's (or the mapping's own) `model` and `parallel`. The
  // mapping's numbers are read here; the sizes are the model layer's
  // (model::deriveSizes).
  void derivedSizes(const YAML::Node& n, TestSpec& spec) const {
    static const std::vector<std::string> keys = {"derive",        "model",        "parallel",      "decode_batch",
                                                  "prefill_chunk", "block_tokens", "prompt_tokens", "tokens"};
    for (const auto& entry : n) {
      const auto key = entry.first.Scalar();
      if (!contains(keys, key))
        fail(entry.first, "unknown key '" + key + "' in derived sizes; expected one of: " + joined(keys));
    }
    const auto& derivations = model::sizeDerivations();
    if (!n["derive"]) fail(n, "derived sizes need 'derive': " + joined(derivations));
    model::SizeDerivationRequest request;
    request.derive = choiceOf(n["derive"], "derive", derivations);
    const YAML::Node modelNode = n["model"] ? n["model"] : model_;
    const YAML::Node parallelNode = n["parallel"] ? n["parallel"] : parallel_;
    if (!modelNode)
      fail(n, "derived sizes need a model: give 'model:' here or at the top of the scenario (e.g. model: llama3-70b)");
    auto counts = [&](const char* key) {
      std::vector<std::uint64_t> out;
      const YAML::Node c = n[key];
      if (!c) return out;
      if (c.IsSequence()) {
        for (const auto& item : c) out.push_back(static_cast<std::uint64_t>(integerOf(item, key, 1, 100'000'000)));
      } else {
        out.push_back(static_cast<std::uint64_t>(integerOf(c, key, 1, 100'000'000)));
      }
      return out;
    };
    request.decodeBatches = counts("decode_batch");
    request.prefillChunks = counts("prefill_chunk");
    request.promptTokens = counts("prompt_tokens");
    request.tokens = counts("tokens");
    if (const auto block = counts("block_tokens"); !block.empty())
      request.blockTokens = static_cast<std::uint32_t>(block.front());
    try {
      const auto m = model::modelSpecFromYaml(modelNode);
      const auto layout = parallelNode ? model::parallelLayoutFromYaml(parallelNode) : model::ParallelLayout{};
      for (const auto& [d, key] : model::deriveSizes(m, layout, request)) {
        if (d.bytes == 0 || d.bytes > static_cast<std::uint64_t>(maxMessageBytes))
          fail(key.empty() ? n : n[key], "derived size " + d.formula + " is outside 1 B..1 GiB");
        spec.sizes.push_back(static_cast<std::int64_t>(d.bytes));
        spec.sizeFormulas.push_back(d.formula);
      }
    } catch (const model::ModelSpecError& e) {
      throw ScenarioError(positionOf(file_, e.node(), n) + ": " + e.message());
    } catch (const std::invalid_argument& e) {
      fail(n, e.what());
    }
  }

  std::vector<std::int64_t> sizesOf(const YAML::Node& n) const {
    std::vector<std::int64_t> sizes;
    auto addScalar = [&](const YAML::Node& item) {
      if (!item.IsScalar()) fail(item, "a size must be a number or text like 4KiB or '8..4MiB x2'");
      try {
        for (auto s : parseSizeList(item.Scalar())) sizes.push_back(s);
      } catch (const std::invalid_argument& e) {
        fail(item, e.what());
      }
    };
    if (n.IsSequence()) {
      if (n.size() == 0) fail(n, "'sizes' is an empty list; give at least one size");
      for (const auto& item : n) addScalar(item);
    } else {
      addScalar(n);
    }
    return sizes;
  }

  // `roles: {canaries: N or P%, placement: spread|packed|random, groups: all or K}`.
  void readRoles(const YAML::Node& r, TestSpec& spec) const {
    if (!r.IsMap()) fail(r, "'roles' must be a mapping, e.g. {canaries: 2, placement: spread}");
    for (const auto& entry : r) {
      const auto key = entry.first.Scalar();
      if (key != "canaries" && key != "placement" && key != "groups")
        fail(entry.first, "unknown key '" + key + "' in roles; expected canaries, placement, groups");
    }
    if (const YAML::Node c = r["canaries"]) {
      if (c.IsScalar() && !c.Scalar().empty() && c.Scalar().back() == '%') {
        double percent = 0;
        try {
          percent = std::stod(c.Scalar());
        } catch (const std::exception&) {
          fail(c, "'canaries' must be a count or a percentage such as 50%");
        }
        if (percent <= 0 || percent > 100) fail(c, "'canaries' percentage must be in (0, 100]");
        spec.canaryFraction = percent / 100.0;
      } else {
        spec.canaries = static_cast<int>(integerOf(c, "canaries", 1, 1'000'000));
      }
    }
    if (r["placement"]) spec.placement = choiceOf(r["placement"], "placement", {"spread", "packed", "random"});
    if (const YAML::Node g = r["groups"]) readGroups(g, spec);
  }

  // `groups: all` (every whole group of `canaries` ranks the test's ranks hold)
  // or a count K (the first K of them): the measuring ranks rotate, one
  // instance per group. The run's size is known here, so the count is final.
  void readGroups(const YAML::Node& g, TestSpec& spec) const {
    if (spec.canaries <= 0)
      fail(g,
           "'groups' rotates the measuring ranks over groups of 'canaries' ranks: give canaries as a count, "
           "e.g. roles: {canaries: 2, placement: packed, groups: all}");
    const int used = spec.ranks > 0 ? std::min(spec.ranks, rules_.worldSize) : rules_.worldSize;
    const int whole = std::max(used / std::min(spec.canaries, used), 1);
    if (g.IsScalar() && g.Scalar() == "all") {
      spec.groups = whole;
      return;
    }
    if (!g.IsScalar() || g.Scalar().empty() || !std::isdigit(static_cast<unsigned char>(g.Scalar()[0])))
      fail(g, "'groups' must be 'all' or a count of groups, e.g. groups: all");
    spec.groups = static_cast<int>(integerOf(g, "groups", 1, 1'000'000));
    if (spec.groups > whole)
      fail(g, "'groups: " + std::to_string(spec.groups) + "' needs " + std::to_string(spec.groups) + " groups of " +
                  std::to_string(spec.canaries) + " ranks; the run's " + std::to_string(used) + " ranks hold " +
                  std::to_string(whole) + " (groups: all takes every one)");
  }

  // `conditions`: one or a list, each known and listed once.
  std::vector<std::string> conditionsOf(const YAML::Node& n) const {
    std::vector<YAML::Node> items;
    if (n.IsSequence()) {
      if (n.size() == 0) fail(n, "'conditions' is empty; use [quiet] for no neighbour traffic");
      for (const auto& c : n) items.push_back(c);
    } else {
      items.push_back(n);
    }
    std::vector<std::string> conditions;
    for (const auto& c : items) {
      const auto v = choiceOf(c, "conditions", rules_.conditions);
      if (contains(conditions, v)) fail(c, "condition '" + v + "' is listed twice");
      conditions.push_back(v);
    }
    return conditions;
  }

  // Every key of the test is common or its kind's; a command key only with
  // --allow-commands or from --set.
  void checkTestKeys(const YAML::Node& test, const TestSpec& spec, const KindRules& kind, std::size_t index) const {
    for (const auto& entry : test) {
      const auto key = entry.first.Scalar();
      if (!contains(commonKeys, key) && !contains(kind.extraKeys, key)) {
        std::vector<std::string> allowed = commonKeys;
        allowed.insert(allowed.end(), kind.extraKeys.begin(), kind.extraKeys.end());
        fail(entry.first, "unknown key '" + key + "' in test '" + spec.name + "' (" + spec.kind +
                              "); expected one of: " + joined(allowed));
      }
    }
    // A command in the scenario file runs only when the admin allows it; one given
    // with --set is the admin's own (testOverrides_ knows which keys --set wrote).
    for (const auto& key : kind.commandKeys) {
      const YAML::Node command = test[key];
      if (!command || rules_.allowCommands || (index < testOverrides_.size() && testOverrides_[index].count(key)))
        continue;
      fail(command, "test '" + spec.name + "' would run the command " + key + ": '" +
                        (command.IsScalar() ? command.Scalar() : std::string("?")) +
                        "'; a scenario's commands run only with --allow-commands (or give the command "
                        "yourself: --set " +
                        spec.name + "." + key +
                        "='...'); 'fabscope list' shows every "
                        "command a scenario would run");
    }
  }

  TestSpec parseTest(const YAML::Node& test, const YAML::Node& defaults, std::size_t index) const {
    if (!test.IsMap()) fail(test, "each entry of 'tests' must be a mapping with at least 'kind' and 'sizes'");
    TestSpec spec;
    spec.at = positionOf(file_, test);
    for (const auto& entry : test) spec.keyAt[entry.first.Scalar()] = positionOf(file_, entry.second);
    if (!test["kind"])
      fail(test, "test #" + std::to_string(index + 1) + " has no 'kind'; known kinds: " + kindNames(rules_));
    spec.kind = scalar(test, "kind", "a test kind", "");
    if (!rules_.kinds.count(spec.kind))
      fail(test["kind"], "unknown test kind '" + spec.kind + "'; known kinds: " + kindNames(rules_));
    const auto& kind = rules_.kinds.at(spec.kind);
    spec.name = scalar(test, "name", "a test name", spec.kind + "-" + std::to_string(index + 1));
    checkTestKeys(test, spec, kind, index);
    const YAML::Node sizes = pick(test, defaults, "sizes");
    if (!sizes) fail(test, "test '" + spec.name + "' has no 'sizes' (e.g. sizes: [8, 4KiB, '64KiB..4MiB x4'])");
    if (sizes.IsMap()) {
      derivedSizes(sizes, spec);
    } else {
      spec.sizes = sizesOf(sizes);
      spec.sizeFormulas.assign(spec.sizes.size(), "");
    }
    auto intKey = [&](const char* key, std::int64_t fallback, std::int64_t min, std::int64_t max) {
      const YAML::Node n = pick(test, defaults, key);
      return static_cast<int>(n ? integerOf(n, key, min, max) : fallback);
    };
    spec.iterations = intKey("iterations", 100, 1, 100'000'000);
    spec.warmup = intKey("warmup", 10, 0, 100'000'000);
    spec.ranks = intKey("ranks", 0, 1, 1'000'000);
    spec.repeats = intKey("repeats", 1, 1, 1000);
    if (const YAML::Node r = pick(test, defaults, "roles")) readRoles(r, spec);
    if (const YAML::Node n = pick(test, defaults, "load_bytes")) {
      if (!n.IsScalar()) fail(n, "'load_bytes' must be a size such as 64KiB");
      try {
        spec.loadBytes = parseSize(n.Scalar());
      } catch (const std::invalid_argument& e) {
        fail(n, e.what());
      }
    }
    if (const YAML::Node n = pick(test, defaults, "budget")) spec.budgetSeconds = budgetOf(n);
    const YAML::Node timeout = pick(test, defaults, "timeout");
    spec.timeoutSeconds = timeout ? deadlineOf(timeout, "timeout") : 60;
    spec.transport =
        availableChoice(pick(test, defaults, "transport"), "transport", rules_.transports, rules_.defaultTransport);
    spec.memory = availableChoice(pick(test, defaults, "memory"), "memory", rules_.memoryKinds, "host");
    const YAML::Node conditions = pick(test, defaults, "conditions");
    spec.conditions = conditions ? conditionsOf(conditions) : std::vector<std::string>{"quiet"};
    return spec;
  }

  std::string availableChoice(const YAML::Node& n, const std::string& key,
                              const std::map<std::string, std::string>& available, const std::string& fallback) const {
    if (!n) return fallback;
    std::vector<std::string> names;
    for (const auto& [name, why] : available) names.push_back(name);
    const std::string v = choiceOf(n, key, names);
    if (!available.at(v).empty()) fail(n, key + " '" + v + "' is not available in this build: " + available.at(v));
    return v;
  }

  std::string file_;
  const ScenarioRules& rules_;
  YAML::Node model_;
  YAML::Node parallel_;
  std::vector<std::map<std::string, std::string>> testOverrides_;
};

}  // namespace

std::string positionOf(const std::string& file, const YAML::Node& node) {
  if (const std::string& tag = node.Tag(); tag.rfind(setOptionTag, 0) == 0) return tag.substr(setOptionTag.size());
  const auto mark = node.Mark();
  if (mark.is_null() || mark.line < 0) return file;
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

ScenarioError modelErrorAt(const std::string& file, const model::ModelSpecError& e, const YAML::Node& fallback) {
  // The node names a --set value's option (positionOf); without one, its line and column.
  if (e.node().IsDefined()) return ScenarioError(positionOf(file, e.node(), fallback) + ": " + e.message());
  return ScenarioError((e.line() > 0 ? file + ":" + std::to_string(e.line()) + ":" + std::to_string(e.column())
                                     : positionOf(file, fallback)) +
                       ": " + e.message());
}

std::string positionOf(const std::string& file, const YAML::Node& node, const YAML::Node& fallback) {
  const std::string place = node.IsDefined() ? positionOf(file, node) : file;
  return place == file ? positionOf(file, fallback) : place;
}

Scenario loadScenarioText(const std::string& text, const std::string& displayName,
                          const std::vector<std::string>& overrides, const ScenarioRules& rules) {
  try {
    return Loader(displayName, rules).load(text, overrides);
  } catch (const YAML::Exception& e) {
    // A safety net: every yaml-cpp surprise is still a bad scenario (exit 2), never a crash.
    const bool placed = !e.mark.is_null();
    throw ScenarioError(
        displayName + (placed ? ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) : "") +
        ": " + e.msg);
  }
}

Scenario loadScenarioFile(const std::string& path, const std::vector<std::string>& overrides,
                          const ScenarioRules& rules) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ScenarioError(path + ": is a folder; expected a scenario file such as scenarios/smoke.yaml");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(path + ": cannot open the scenario file (does it exist and is it readable?)");
  std::ostringstream text;
  text << in.rdbuf();
  return loadScenarioText(text.str(), path, overrides, rules);
}

// --- ParamReader ---------------------------------------------------------------

bool ParamReader::has(const std::string& key) const { return static_cast<bool>(node()[key]); }

void ParamReader::fail(const std::string& key, const std::string& message) const {
  const auto o = spec_.overrides.find(key);
  if (!nested_ && o != spec_.overrides.end()) throw ScenarioError(o->second + ": " + message);
  const YAML::Node n = node()[key];
  throw ScenarioError(positionOf(file_, n ? n : node()) + ": " + message);
}

std::int64_t ParamReader::integer(const std::string& key, std::int64_t fallback, std::int64_t min,
                                  std::int64_t max) const {
  const YAML::Node n = node()[key];
  if (!n) return fallback;
  std::int64_t v = 0;
  if (!n.IsScalar() || !YAML::convert<std::int64_t>::decode(n, v))
    fail(key, "'" + prefix_ + key + "' in test '" + spec_.name + "' must be a whole number");
  if (v < min || v > max)
    fail(key, "'" + prefix_ + key + "' in test '" + spec_.name + "' is " + std::to_string(v) + "; expected " +
                  std::to_string(min) + ".." + std::to_string(max));
  return v;
}

double ParamReader::number(const std::string& key, double fallback, double min, double max) const {
  const YAML::Node n = node()[key];
  if (!n) return fallback;
  double v = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v))
    fail(key, "'" + prefix_ + key + "' in test '" + spec_.name + "' must be a number");
  if (v < min || v > max) {
    std::ostringstream range;
    range << min << ".." << max;
    fail(key, "'" + prefix_ + key + "' in test '" + spec_.name + "' is " + n.Scalar() + "; expected " + range.str());
  }
  return v;
}

std::string ParamReader::choice(const std::string& key, const std::vector<std::string>& allowed,
                                const std::string& fallback) const {
  const YAML::Node n = node()[key];
  if (!n) return fallback;
  if (!n.IsScalar() || !contains(allowed, n.Scalar()))
    fail(key, "'" + prefix_ + key + "' in test '" + spec_.name + "' is '" +
                  (n.IsScalar() ? n.Scalar() : std::string("not a word")) + "'; expected one of: " + joined(allowed));
  return n.Scalar();
}

ParamReader ParamReader::mapping(const std::string& key, const std::vector<std::string>& allowedKeys) const {
  const YAML::Node n = node()[key];
  YAML::Node m = n ? n : YAML::Node(YAML::NodeType::Map);
  if (!m.IsMap())
    fail(key,
         "'" + prefix_ + key + "' in test '" + spec_.name + "' must be a mapping with keys " + joined(allowedKeys));
  for (const auto& entry : m) {
    const auto k = entry.first.Scalar();
    if (!contains(allowedKeys, k))
      throw ScenarioError(positionOf(file_, entry.first) + ": unknown key '" + k + "' in '" + prefix_ + key +
                          "' of test '" + spec_.name + "'; expected one of: " + joined(allowedKeys));
  }
  return ParamReader(spec_, file_, m, prefix_ + key + ".");
}

// --- TransportSource -----------------------------------------------------------

bool TransportSource::has(const std::string& key) const { return static_cast<bool>(settings_[key]); }

void TransportSource::fail(const std::string& key, const std::string& message) const {
  const YAML::Node n = settings_[key];
  throw ScenarioError(positionOf(file_, n ? n : settings_) + ": " + message);
}

std::int64_t TransportSource::integer(const std::string& key, std::int64_t min, std::int64_t max) const {
  const YAML::Node n = settings_[key];
  std::int64_t v = 0;
  if (!n.IsScalar() || !YAML::convert<std::int64_t>::decode(n, v))
    fail(key, "'" + key + "' must be a whole number, got '" + text(key) + "'");
  if (v < min || v > max)
    fail(key,
         "'" + key + "' is " + std::to_string(v) + "; expected " + std::to_string(min) + ".." + std::to_string(max));
  return v;
}

std::string TransportSource::text(const std::string& key) const {
  const YAML::Node n = settings_[key];
  return n.IsScalar() ? n.Scalar() : std::string("a list or mapping");
}

std::string TransportSource::where(const std::string& key) const {
  const YAML::Node n = settings_[key];
  return positionOf(file_, n ? n : settings_);
}

}  // namespace fabscope::scenario
