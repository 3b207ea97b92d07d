#include "kinds/Registry.hpp"

#include "fabscope/BuildConfig.hpp"
#include "memory/MemoryKinds.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::suite {

// Each kind's factory, defined in its own folder: a new kind is one line here and
// one entry in the list below.
std::unique_ptr<Kind> makeLatencyKind();
std::unique_ptr<Kind> makeBandwidthKind();
std::unique_ptr<Kind> makeBidirectionalBandwidthKind();
std::unique_ptr<Kind> makeAllReduceKind();
std::unique_ptr<Kind> makeAllToAllKind();
std::unique_ptr<Kind> makeApiKind();
std::unique_ptr<Kind> makeIncastKind();
std::unique_ptr<Kind> makeKvPushKind();
std::unique_ptr<Kind> makeFaultDrillKind();
std::unique_ptr<Kind> makeMixKind();
std::unique_ptr<Kind> makeReferenceKind();
std::unique_ptr<Kind> makeExampleKind();

Registry::Registry() {
  // One line each (the trailing comma keeps them so), in no particular order: the map sorts them.
  for (auto make : {
           makeLatencyKind,
           makeBandwidthKind,
           makeBidirectionalBandwidthKind,
           makeKvPushKind,
           makeAllReduceKind,
           makeAllToAllKind,
           makeApiKind,
           makeIncastKind,
           makeFaultDrillKind,
           makeMixKind,
           makeReferenceKind,
           makeExampleKind,
       }) {
    auto k = make();
    auto name = k->name();
    kinds_.emplace(std::move(name), std::move(k));
  }
}

Registry::Registry(std::vector<std::unique_ptr<Kind>> kinds) {
  for (auto& k : kinds) {
    auto name = k->name();
    kinds_.emplace(std::move(name), std::move(k));
  }
}

const Kind& Registry::kind(const std::string& name) const {
  const auto it = kinds_.find(name);
  if (it == kinds_.end()) throw UsageError("unknown test kind '" + name + "'");
  return *it->second;
}

scenario::ScenarioRules Registry::scenarioRules(int worldSize) const {
  scenario::ScenarioRules rules;
  for (const auto& [name, kind] : kinds_) rules.kinds.emplace(name, kind->rules());
  rules.transports = transport::transportAvailability();
  rules.transportSettings = transport::transportSettingsRules();
  rules.defaultTransport = transport::defaultTransport;
  for (const auto& m : memory::memoryKinds()) rules.memoryKinds.emplace(m.name, m.unavailable);
  rules.conditions = {"quiet", "incast", "alltoall", "bidirectional", "copy"};
  rules.worldSize = worldSize;
  return rules;
}

}  // namespace fabscope::suite
