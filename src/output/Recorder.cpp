#include "output/Recorder.hpp"

#include <cstdio>

#include "runtime/Deadlines.hpp"

namespace fabscope::output {

std::string instanceGroupPath(int index) {
  char name[32];
  std::snprintf(name, sizeof name, "/tests/%04d", index);
  return name;
}

runtime::Deadline Recorder::step() const { return runtime::Deadline::afterSeconds(stepSeconds_); }

void Recorder::attributes(const std::string& object, const Attributes& attributes) {
  file_.setAttributes(object, attributes, step());
}

void Recorder::rank(const RankRecord& row) { file_.writeTable<RankRecord>("/ranks", std::span(&row, 1), step()); }

void Recorder::testsGroup() {
  file_.createGroup("/tests");
  file_.flush();
}

void Recorder::validity(std::span<const ValidityRecord> rows, const Attributes& rootAttributes,
                        const runtime::Deadline& deadline) {
  file_.writeTable<ValidityRecord>("/validity", rows, deadline);
  file_.setAttributes("/", rootAttributes, deadline);
}

void Recorder::skipped(const std::string& group, const Attributes& attributes) {
  const auto deadline = step();
  file_.createGroup(group);
  file_.setAttributes(group, attributes, deadline);
  file_.writeTable<SampleRecord>(group + "/samples", {}, deadline);
  file_.flush();
}

void Recorder::instance(const InstanceRecord& r, const runtime::Deadline& deadline) {
  file_.createGroup(r.group);
  file_.setAttributes(r.group, r.attributes, deadline);
  file_.writeTable<SampleRecord>(r.group + "/samples", r.samples, deadline);
  file_.writeTable<SummaryRecord>(r.group + "/summary", r.summary, deadline);
  if (r.withScopes) file_.writeTable<ScopeRecord>(r.group + "/scopes", r.scopes, deadline);
  if (r.withPairMatrix) file_.writeMatrix(r.group + "/pair_matrix", r.pairMatrix, r.ranks, r.ranks);
  file_.writeTable<CounterRecord>(r.group + "/counters", r.counters, deadline);
  // Every rank writes every declared table (collective), with its own rows.
  for (const auto& declared : r.declaredTables) {
    KindTable mine = declared;
    for (const auto& t : r.tables)
      if (t.name() == declared.name()) mine.append(t);
    file_.writeTable(r.group + "/" + declared.name(), mine.layout(), mine.bytes(), deadline);
  }
  file_.setAttributes(r.group, r.verdict, deadline);
  file_.flush();
}

void Recorder::continueAlone() { file_.continueAlone(); }

void Recorder::interrupted(const std::string& group, const Attributes& attributes,
                           std::span<const SampleRecord> samples, const runtime::Deadline& deadline) {
  file_.createGroup(group);
  file_.setAttributes(group, attributes, deadline);
  file_.writeTable<SampleRecord>(group + "/samples", samples, deadline);
}

void Recorder::attributes(const std::string& object, const Attributes& attributes, const runtime::Deadline& deadline) {
  file_.setAttributes(object, attributes, deadline);
}

void Recorder::flush() { file_.flush(); }

std::string transportSettingAttribute(const std::string& key) { return "setting_" + key; }
std::string transportSettingOriginAttribute(const std::string& key) { return "setting_" + key + "_from"; }

void Recorder::transportGroup(const std::string& name) {
  if (transportGroups_.contains(name)) return;
  if (transportGroups_.empty()) file_.createGroup("/transports");
  file_.createGroup("/transports/" + name);
  transportGroups_.insert(name);
}

void Recorder::transport(const std::string& name, const Attributes& facts) {
  if (facts.empty()) return;
  transportGroup(name);
  file_.setAttributes("/transports/" + name, facts, step());
}

void Recorder::transportSettings(const std::string& name, const std::vector<TransportSetting>& settings) {
  if (settings.empty()) return;
  Attributes attributes;
  for (const auto& s : settings) {
    attributes.emplace_back(transportSettingAttribute(s.key), s.value);
    attributes.emplace_back(transportSettingOriginAttribute(s.key), s.from);
  }
  transportGroup(name);
  file_.setAttributes("/transports/" + name, attributes, step());
}

}  // namespace fabscope::output
