#pragma once
// The one writer of a run's results into the result file: the run's header
// and closing attributes, /ranks, /validity, every test instance (measured or
// skipped) and /transports. The runner's stages compute; the recorder only writes,
// in the order docs/file-format.md promises (an instance's `status` last).
// Every call is collective over the file's communicator.
#include <cstddef>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "output/KindTable.hpp"
#include "output/Records.hpp"
#include "output/ResultFile.hpp"
#include "runtime/Deadline.hpp"
#include "runtime/Deadlines.hpp"

namespace fabscope::output {

// "/tests/0007" for instance 7.
std::string instanceGroupPath(int index);

// One scenario key of a transport as the run uses it: its value and where it
// was given ("file:line:column" of the scenario, or the --set that gave it).
struct TransportSetting {
  std::string key;
  std::string value;
  std::string from;
};
// The attribute names of a setting in /transports/<name> (src/output/schema.yaml,
// transport_settings): `setting_<key>` holds its value, `setting_<key>_from` where it was given.
std::string transportSettingAttribute(const std::string& key);
std::string transportSettingOriginAttribute(const std::string& key);

// One instance as one rank writes it.
struct InstanceRecord {
  std::string group;      // /tests/NNNN
  Attributes attributes;  // rank 0's are written
  Attributes verdict;     // status and error: written last
  std::span<const SampleRecord> samples;
  std::span<const SummaryRecord> summary;
  bool withScopes = false;  // runs with site labels only
  std::span<const ScopeRecord> scopes;
  bool withPairMatrix = false;  // all-pairs only: ranks x ranks, rank 0's values
  std::span<const double> pairMatrix;
  std::size_t ranks = 0;
  std::span<const CounterRecord> counters;
  // The kind's declared tables (empty rows) and this rank's rows of them.
  std::vector<KindTable> declaredTables;
  std::vector<KindTable> tables;
};

class Recorder {
 public:
  // `stepSeconds`: the deadline of one step (a header, a table, a flush); the
  // runner passes the scenario's control_timeout, else its control_grace.
  explicit Recorder(ResultFile& file, double stepSeconds = runtime::deadlines::controlGraceSeconds)
      : file_(file), stepSeconds_(stepSeconds) {}

  void attributes(const std::string& object, const Attributes& attributes);
  void rank(const RankRecord& row);
  void testsGroup();
  // /validity (every rank's rows joined: rank 0 passes the findings, the others
  // none) and the root attributes that go with it.
  void validity(std::span<const ValidityRecord> rows, const Attributes& rootAttributes,
                const runtime::Deadline& deadline);
  // A test not run: its attributes (status skipped) and no samples.
  void skipped(const std::string& group, const Attributes& attributes);
  void instance(const InstanceRecord& record, const runtime::Deadline& deadline);
  // After lost ranks, on rank 0 alone (ResultFile::continueAlone): the
  // interrupted instance's attributes and the samples the survivors sent.
  void continueAlone();
  void interrupted(const std::string& group, const Attributes& attributes, std::span<const SampleRecord> samples,
                   const runtime::Deadline& deadline);
  void attributes(const std::string& object, const Attributes& attributes, const runtime::Deadline& deadline);
  void flush();
  // Facts a transport can only tell after use; nothing when it has none.
  void transport(const std::string& name, const Attributes& facts);
  // The settings the scenario gave a transport, with their origins, at the
  // run's start (a run that ends early still says what it ran with); nothing
  // when it gave none (a transport's defaults are not written).
  void transportSettings(const std::string& name, const std::vector<TransportSetting>& settings);

 private:
  runtime::Deadline step() const;
  void transportGroup(const std::string& name);
  ResultFile& file_;
  double stepSeconds_;
  std::set<std::string> transportGroups_;  // the /transports/<name> groups made so far
};

}  // namespace fabscope::output
