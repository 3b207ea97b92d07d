#pragma once
// What a kind's parse step (KindRules::parse) reads: one test's YAML mapping
// and the scenario's top-level model and parallel. It exists only while the
// loader runs; the parse step turns it into the kind's typed config, so no
// YAML goes past loading. Included by the loader and the kinds' parse
// functions only, and by the transports' (TransportSource, below).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/ModelSpecYaml.hpp"
#include "scenario/Scenario.hpp"

namespace fabscope::scenario {

struct TestSource {
  std::string file;
  YAML::Node test;      // the test's mapping, --set values applied
  YAML::Node model;     // the scenario's top-level `model`; Undefined when absent
  YAML::Node parallel;  // the scenario's top-level `parallel`; Undefined when absent
  int worldSize = 1;
};

// Typed access to a test's kind-specific keys with errors that point at the file.
class ParamReader {
 public:
  ParamReader(const TestSpec& spec, const TestSource& source) : spec_(spec), file_(source.file), node_(source.test) {}
  // A nested mapping (e.g. `sizes`): its keys are named "prefix.key".
  ParamReader(const TestSpec& spec, std::string file, YAML::Node node, std::string prefix)
      : spec_(spec), file_(std::move(file)), node_(std::move(node)), prefix_(std::move(prefix)), nested_(true) {}

  bool has(const std::string& key) const;
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max) const;
  double number(const std::string& key, double fallback, double min, double max) const;
  std::string choice(const std::string& key, const std::vector<std::string>& allowed,
                     const std::string& fallback) const;
  // A nested mapping with its own allowed keys.
  ParamReader mapping(const std::string& key, const std::vector<std::string>& allowedKeys) const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  const YAML::Node& node() const { return node_; }
  const TestSpec& spec_;
  std::string file_;
  YAML::Node node_;
  std::string prefix_;
  bool nested_ = false;
};

// One transport's mapping under the scenario's 'transports:' (empty when the
// scenario gives none), for its parse step (TransportRules::parse): typed
// access to its keys with errors that point at the file.
class TransportSource {
 public:
  TransportSource(std::string file, std::string name, YAML::Node settings)
      : file_(std::move(file)), name_(std::move(name)), settings_(std::move(settings)) {}

  const std::string& name() const { return name_; }
  bool has(const std::string& key) const;
  // A whole number in min..max: "'key' must be a whole number, got '...'", "'key' is N; expected min..max".
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max) const;
  // The value as written, or "a list or mapping" when it is not a plain value.
  std::string text(const std::string& key) const;
  // "file:line:column" of the key's value.
  std::string where(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  std::string file_;
  std::string name_;
  YAML::Node settings_;
};

// "file:line:column" of a node (1-based), or "file" when it has no position;
// for a value given with --set (or any part of it), that option: "--set KEY=VALUE".
std::string positionOf(const std::string& file, const YAML::Node& node);
// The same, with `fallback`'s position when `node` has none of its own.
std::string positionOf(const std::string& file, const YAML::Node& node, const YAML::Node& fallback);

// A model or parallel layout the parse step could not read
// (model/ModelSpecYaml.hpp), as a ScenarioError at the error's own position,
// else at `fallback`'s.
ScenarioError modelErrorAt(const std::string& file, const model::ModelSpecError& e, const YAML::Node& fallback);

}  // namespace fabscope::scenario
