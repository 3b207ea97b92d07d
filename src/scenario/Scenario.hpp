#pragma once
// A scenario file, parsed and validated: the tests to run and their axes.
// No YAML past this point: each kind's own keys are read once, at load, into
// the kind's typed config (KindRules::parse, TestSpec::config); the YAML
// itself is seen only by the loader and the kinds' parse steps
// (scenario/TestSource.hpp).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/Errors.hpp"

namespace fabscope::scenario {

// Bad scenario or override: exit code 2, message "file:line:column: ...".
class ScenarioError : public UsageError {
 public:
  using UsageError::UsageError;
};

// A kind's own keys of one test, read and checked once at load by the kind's
// parse step (KindRules::parse). Each kind derives its own config from this;
// plan and run read it through configOf<Config>(spec).
class KindConfig {
 public:
  virtual ~KindConfig() = default;
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
  // roles.groups: the measuring ranks rotate over this many groups of
  // `canaries` consecutive ranks in placement order (group g: positions
  // g x canaries ..), one instance per group (every TP or EP group of a
  // deployment measured in turn); 0: no rotation, the first group only.
  int groups = 0;
  std::int64_t loadBytes = 64 * 1024;            // message size of the neighbour traffic
  double budgetSeconds = 0;                      // budget: the test's time budget (0: none)
  std::vector<std::string> sizeFormulas;         // per size: how it was derived ("" if given literally)
  std::map<std::string, std::string> overrides;  // key -> "--set key=value" that set it
  // Where the test stands, captured at load for messages after it (plan):
  // "file:line:column" of the test's mapping, and of each key's value in it.
  std::string at;
  std::map<std::string, std::string> keyAt;
  // The kind's keys as its parse step read them (configOf below).
  std::shared_ptr<const KindConfig> config;

  // "file:line:column" of `key` in the test's own mapping, else of the test.
  const std::string& where(const std::string& key) const {
    const auto it = keyAt.find(key);
    return it == keyAt.end() ? at : it->second;
  }
};

// The test's config as its kind's parse step made it. A kind asking for
// another kind's config type is a programming error, said plainly.
template <typename Config>
const Config& configOf(const TestSpec& spec) {
  const auto* config = dynamic_cast<const Config*>(spec.config.get());
  if (!config)
    throw std::logic_error("test '" + spec.name + "' (" + spec.kind + "): " +
                           (spec.config ? "its config is not the type asked for (another kind's config?)"
                                        : "it has no config (was it loaded with its kind's rules?)"));
  return *config;
}

// One key of a transport's settings as the run will use it: its value, and
// the "file:line:column" that gave it (empty: the transport's default).
struct TransportSettingValue {
  std::string key;
  std::string value;
  std::string from;
};

// A transport's own settings from the scenario's top-level 'transports:'
// mapping, read once at load by the transport's parse step
// (TransportRules::parse, declared with the transport in its own
// transport/<Name>Transport.cpp). Each transport with keys derives its own;
// its opener reads it through transportSettingsOf<Settings>, everyone else
// (fabscope list, the tests) through values().
class TransportSettings {
 public:
  virtual ~TransportSettings() = default;
  // Every key, given or default, in the order the transport declares them.
  virtual std::vector<TransportSettingValue> values() const = 0;
};

// Transport name -> its settings: every transport that has keys, with its
// defaults when the scenario gives none.
using TransportSettingsByName = std::map<std::string, std::shared_ptr<const TransportSettings>>;

// The settings `name`'s parse step made; asking for another type, or for a
// transport the loader did not read, is a programming error, said plainly.
template <typename Settings>
const Settings& transportSettingsOf(const TransportSettingsByName& all, const std::string& name) {
  const auto it = all.find(name);
  const auto* settings = it == all.end() ? nullptr : dynamic_cast<const Settings*>(it->second.get());
  if (!settings)
    throw std::logic_error("transport '" + name + "': " +
                           (it == all.end() ? "no settings (was the scenario loaded with its transports' rules?)"
                                            : "its settings are not the type asked for"));
  return *settings;
}

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
  // Control-plane deadlines (top-level 'control_timeout', 'control_grace'):
  // each step outside a test once the scenario is read (start-up, opening a
  // transport, a step of the result file; 0: the defaults of
  // runtime/Deadlines.hpp, 120 s and 60 s), and the grace after a test's own
  // deadline before a silent rank is declared lost.
  double controlTimeoutSeconds = 0;
  double controlGraceSeconds = 30;
  TransportSettingsByName transports;
  // budget: the whole scenario's time budget (0: none), and where it was given.
  double budgetSeconds = 0;
  std::string budgetAt;
  std::vector<TestSpec> tests;
  std::vector<std::string> overrides;
};

struct TestSource;  // the test's YAML, for parse steps only (scenario/TestSource.hpp)

// What the rest of the program allows, so the loader can reject early.
struct KindRules {
  std::vector<std::string> extraKeys;  // keys beyond the common ones
  // Keys whose value is a shell command: refused unless the run allows commands
  // (--allow-commands) or the value came from --set.
  std::vector<std::string> commandKeys;
  int minRanks = 1;
  // The kind measures over whichever ranks an instance's roles give, so
  // roles.groups may rotate them (a kind that places its ranks at plan time,
  // such as the pair patterns, may not).
  bool groupRotation = false;
  // Reads and checks the kind's own keys of one test, once, at load (the
  // common keys are in `spec` already); the result becomes `spec.config`.
  // Throws ScenarioError "file:line:column: ..." (use ParamReader).
  std::function<std::shared_ptr<const KindConfig>(const TestSpec& spec, const TestSource& source)> parse;
};

class TransportSource;  // one transport's mapping under 'transports:' (scenario/TestSource.hpp)

// A transport's keys under the scenario's 'transports:' and its parse step.
struct TransportRules {
  std::vector<std::string> keys;
  std::string example;  // a mapping of its keys, e.g. "{wait: blocking}", for messages
  // Reads and checks the transport's keys (the loader has refused unknown
  // ones), once, at load; called with an empty mapping when the scenario gives
  // none, so it returns the defaults. Throws ScenarioError "file:line:column: ...".
  std::function<std::shared_ptr<const TransportSettings>(const TransportSource& source)> parse;
};

struct ScenarioRules {
  std::map<std::string, KindRules> kinds;
  std::map<std::string, std::string> transports;            // name -> "" if built, else why not
  std::map<std::string, TransportRules> transportSettings;  // the transports that have keys
  std::string defaultTransport;                             // a test's transport when it names none
  std::map<std::string, std::string> memoryKinds;           // name -> "" if built, else why not
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

}  // namespace fabscope::scenario
