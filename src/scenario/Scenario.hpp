#pragma once
// A scenario file, parsed and validated: the tests to run and their axes.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/Errors.hpp"

namespace fabscope::scenario {

// Bad scenario or override: exit code 2, message "file:line:column: ...".
class ScenarioError : public UsageError {
 public:
  using UsageError::UsageError;
};

struct TestSpec {
  std::string name;
  std::string kind;
  std::vector<std::int64_t> sizes;
  int iterations = 0;
  int warmup = 0;
  double timeoutSeconds = 0;
  std::string transport;
  std::string memory;
  std::vector<std::string> conditions;
  int ranks = 0;  // participating ranks; 0 = all
  // Each case measured this many times, interleaved with the other cases (rounds
  // over the whole matrix): replicates of one case for compare's top level.
  int repeats = 1;
  // roles: which of the participating ranks measure; the rest make neighbour
  // traffic under congested conditions.
  int canaries = 0;
  double canaryFraction = 0;
  std::string placement = "spread";
  std::int64_t loadBytes = 64 * 1024;  // message size of the neighbour traffic
  std::vector<std::string> sizeFormulas;  // per size: how it was derived ("" if given literally)
  YAML::Node scenarioModel;     // the scenario's top-level `model`, if any
  YAML::Node scenarioParallel;  // the scenario's top-level `parallel`, if any
  YAML::Node node;  // the test's mapping, for keys of its kind
  std::map<std::string, std::string> overrides;  // key -> "--set key=value" that set it
};

// Per-run transport settings from the scenario's top-level 'transports:' mapping,
// for experiments; each only lowers what the transport would otherwise use.
struct TransportSettings {
  // transports: {verbs: {max_rd_atomic: N}} (1..255): RDMA reads in flight per
  // queue pair; 0 = the limit the two devices agree on.
  int verbsMaxReadsInFlight = 0;
  std::string verbsMaxReadsInFlightFrom;  // "file:line:column" that set it
};

struct Scenario {
  std::string name;
  std::string description;
  // Criteria file the verdict uses for this scenario (docs/analysis.md, "The verdict");
  // read by fabscope_analysis from the stored scenario text. Empty: the shipped default.
  std::string criteria;
  std::string file;
  std::string text;
  std::uint64_t seed = 0;
  bool seedGiven = false;
  std::string hdf5Mode = "auto";  // auto | parallel | serial
  // Samples and buffers one rank may allocate for one test instance.
  std::int64_t maxMemoryPerRank = std::int64_t{4} << 30;
  TransportSettings transports;
  std::vector<TestSpec> tests;
  std::vector<std::string> overrides;
};

// What the rest of the program allows, so the loader can reject early.
struct KindRules {
  std::vector<std::string> extraKeys;  // keys beyond the common ones
  // Keys whose value is a shell command: refused unless the run allows commands
  // (--allow-commands) or the value came from --set (issue 27).
  std::vector<std::string> commandKeys;
  int minRanks = 1;
  // Checks the kind's own keys; throws ScenarioError (use ParamReader).
  std::function<void(const TestSpec&, const std::string& file, int worldSize)> validate;
};

struct ScenarioRules {
  std::map<std::string, KindRules> kinds;
  std::map<std::string, std::string> transports;  // name -> "" if built, else why not
  std::map<std::string, std::string> memoryKinds;  // name -> "" if built, else why not
  std::vector<std::string> conditions;
  int worldSize = 1;
  // --allow-commands: a scenario file's own commands may run. Off by default: a
  // scenario from elsewhere must not run what it says as whoever runs fabscope.
  bool allowCommands = false;
};

Scenario loadScenarioFile(const std::string& path, const std::vector<std::string>& overrides,
                          const ScenarioRules& rules);
Scenario loadScenarioText(const std::string& text, const std::string& displayName,
                          const std::vector<std::string>& overrides, const ScenarioRules& rules);

// Typed access to a test's kind-specific keys with errors that point at the file.
class ParamReader {
 public:
  ParamReader(const TestSpec& spec, std::string file) : spec_(spec), file_(std::move(file)) {}
  ParamReader(const TestSpec& spec, std::string file, YAML::Node node, std::string prefix)
      : spec_(spec), file_(std::move(file)), node_(std::move(node)), prefix_(std::move(prefix)),
        nested_(true) {}

  bool has(const std::string& key) const;
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t min,
                       std::int64_t max) const;
  double number(const std::string& key, double fallback, double min, double max) const;
  std::string choice(const std::string& key, const std::vector<std::string>& allowed,
                     const std::string& fallback) const;
  // A nested mapping with its own allowed keys.
  ParamReader mapping(const std::string& key, const std::vector<std::string>& allowedKeys) const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  YAML::Node node() const { return nested_ ? node_ : spec_.node; }
  const TestSpec& spec_;
  std::string file_;
  YAML::Node node_;
  std::string prefix_;
  bool nested_ = false;
};

// "file:line:column" of a node (1-based), or "file" when it has no position;
// for a value given with --set (or any part of it), that option: "--set KEY=VALUE".
std::string positionOf(const std::string& file, const YAML::Node& node);
// The same, with `fallback`'s position when `node` has none of its own.
std::string positionOf(const std::string& file, const YAML::Node& node, const YAML::Node& fallback);

}  // namespace fabscope::scenario
