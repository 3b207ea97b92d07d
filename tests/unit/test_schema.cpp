// The file's tables in src/output/schema.yaml against their one description,
// the records (output/RecordLayout.hpp): the core tables' here, each kind's
// from the kind itself (Kind::tables()), so a new kind's table needs no line
// here. The `tables:` section of the schema is the text this test prints from
// the records, and `instance_attributes: kinds:` from the kinds' declarations of
// their attributes; FABSCOPE_SCHEMA_WRITE=1 rewrites both on purpose.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "kinds/Registry.hpp"
#include "output/DeclaredAttributes.hpp"
#include "output/KindTable.hpp"
#include "output/Records.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::output {
namespace {

const std::string schemaPath = std::string(FABSCOPE_SOURCE_DIR) + "/src/output/schema.yaml";

struct DeclaredTable {
  std::string where;  // its path in the file and the kinds that write it
  const RecordLayout* layout;
};

std::map<std::string, DeclaredTable> coreTables() {
  return {{"ranks", {"/ranks", &layoutOf<RankRecord>()}},
          {"validity", {"/validity", &layoutOf<ValidityRecord>()}},
          {"samples", {"/tests/NNNN/samples", &layoutOf<SampleRecord>()}},
          {"summary", {"/tests/NNNN/summary", &layoutOf<SummaryRecord>()}},
          {"scopes", {"/tests/NNNN/scopes", &layoutOf<ScopeRecord>()}},
          {"counters", {"/tests/NNNN/counters", &layoutOf<CounterRecord>()}}};
}

// Every kind's tables, by name; two kinds that write one table must give it one layout.
std::map<std::string, DeclaredTable> kindTables(std::vector<std::string>& conflicts) {
  std::map<std::string, DeclaredTable> tables;
  const suite::Registry registry;
  for (const auto& [kindName, kind] : registry.all()) {
    for (const auto& table : kind->tables()) {
      const DeclaredTable declared{"/tests/NNNN/" + table.name() + " (", &table.layout()};
      auto [it, added] = tables.emplace(table.name(), declared);
      if (!added && it->second.layout != &table.layout())
        conflicts.push_back(table.name() + ": " + kindName + " writes it with another record");
      it->second.where += (added ? "" : ", ") + kindName;
    }
  }
  for (auto& [name, table] : tables) table.where += ")";
  return tables;
}

std::string tablesSection(const std::map<std::string, DeclaredTable>& core,
                          const std::map<std::string, DeclaredTable>& kinds) {
  std::ostringstream out;
  out << "tables:\n";
  for (const auto* group : {&core, &kinds}) {
    for (const auto& [name, table] : *group) {
      out << "  " << name << ":  # " << table.where << "\n";
      for (const auto& c : table.layout->columns) {
        const auto type = schemaTypeName(c);
        out << "    - [" << c.name << ", " << (type.starts_with("str") ? "\"" + type + "\"" : type) << "]";
        if (!c.unit.empty()) out << "  # " << c.unit;
        out << "\n";
      }
    }
  }
  return out.str();
}

// The schema file split around its `tables:` section (up to the first line
// that is blank or not indented).
struct SchemaText {
  std::string before, section, after;
};

SchemaText readSchema() {
  std::ifstream in(schemaPath);
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string text = whole.str();
  const auto start = text.find("\ntables:\n");
  if (start == std::string::npos) return {text, "", ""};
  auto end = start + 9;
  while (end < text.size() && text[end] == ' ') end = text.find('\n', end) + 1;
  return {text.substr(0, start + 1), text.substr(start + 1, end - start - 1), text.substr(end)};
}

TEST(Schema, TablesAreTheRecordsOfTheCoreAndOfEveryKind) {
  std::vector<std::string> conflicts;
  const auto kinds = kindTables(conflicts);
  EXPECT_TRUE(conflicts.empty()) << conflicts.front();
  const auto core = coreTables();
  for (const auto& [name, table] : kinds) EXPECT_FALSE(core.contains(name)) << "a kind's table shadows " << name;
  const auto expected = tablesSection(core, kinds);
  auto schema = readSchema();
  if (std::getenv("FABSCOPE_SCHEMA_WRITE") != nullptr) {
    std::ofstream(schemaPath) << schema.before << expected << schema.after;
    schema.section = expected;
  }
  EXPECT_EQ(schema.section, expected)
      << "src/output/schema.yaml's tables differ from the records: FABSCOPE_SCHEMA_WRITE=1 rewrites them "
         "(then docs/file-format.md and analysis/tests/test_schema.py say what else to update)";
}

// The `kinds:` part of `instance_attributes`, as every kind declares its own
// attributes (Kind::declaredAttributes), a note's lines as comments above its entry.
std::string kindAttributesSection() {
  std::ostringstream out;
  out << "  kinds:  # printed from each kind's declaration (Kind::declaredAttributes)\n";
  const suite::Registry registry;
  for (const auto& [kindName, kind] : registry.all()) {
    const auto declared = kind->declaredAttributes();
    out << "    " << kindName << ":" << (declared.empty() ? " []" : "") << "\n";
    for (const auto& a : declared) {
      std::istringstream note(a.note);
      for (std::string line; std::getline(note, line);) out << "      # " << line << "\n";
      out << "      - [" << a.name << ", " << schemaTypeName(a.type)
          << (a.presence == Presence::sometimes ? ", optional" : "") << "]\n";
    }
  }
  return out.str();
}

// The schema file split around the `kinds:` part of `instance_attributes` (up to
// the first line that is blank or indented less than a kind's entries).
SchemaText splitAtKindAttributes(const std::string& text) {
  const auto section = text.find("\ninstance_attributes:\n");
  const auto start = section == std::string::npos ? section : text.find("\n  kinds:", section);
  if (start == std::string::npos) return {text, "", ""};
  auto end = text.find('\n', start + 1) + 1;
  while (end < text.size() && text.compare(end, 4, "    ") == 0) end = text.find('\n', end) + 1;
  if (end == 0) end = text.size();
  return {text.substr(0, start + 1), text.substr(start + 1, end - start - 1), text.substr(end)};
}

// The first line where `written` and `expected` differ, both sides, for a short message.
std::string firstDifference(const std::string& written, const std::string& expected) {
  std::istringstream a(written), b(expected);
  std::string left, right;
  for (int line = 1;; ++line) {
    const bool moreLeft = static_cast<bool>(std::getline(a, left));
    const bool moreRight = static_cast<bool>(std::getline(b, right));
    if (!moreLeft && !moreRight) return "";
    if (!moreLeft || !moreRight || left != right)
      return "line " + std::to_string(line) + " of the section: schema.yaml has '" + (moreLeft ? left : "(end)") +
             "', the declarations give '" + (moreRight ? right : "(end)") + "'";
  }
}

TEST(Schema, KindAttributesAreEveryKindsDeclaration) {
  const auto expected = kindAttributesSection();
  std::stringstream whole;
  whole << std::ifstream(schemaPath).rdbuf();
  auto schema = splitAtKindAttributes(whole.str());
  if (std::getenv("FABSCOPE_SCHEMA_WRITE") != nullptr) {
    std::ofstream(schemaPath) << schema.before << expected << schema.after;
    schema.section = expected;
  }
  EXPECT_TRUE(schema.section == expected)
      << "src/output/schema.yaml's instance_attributes: kinds: differ from the kinds' declarations "
         "(Kind::declaredAttributes), "
      << firstDifference(schema.section, expected)
      << ": FABSCOPE_SCHEMA_WRITE=1 rewrites them (then docs/file-format.md)";
}

TEST(Schema, LayoutsCoverTheirRecordsInOrderWithoutOverlap) {
  std::vector<std::string> conflicts;
  auto all = coreTables();
  all.merge(kindTables(conflicts));
  for (const auto& [name, table] : all) {
    std::size_t end = 0;
    for (const auto& c : table.layout->columns) {
      EXPECT_GE(c.offset, end) << name << "." << c.name << " overlaps the column before it";
      end = c.offset + c.bytes;
    }
    EXPECT_LE(end, table.layout->rowBytes) << name;
  }
}

TEST(Schema, CompoundTypeIsTheLayout) {
  const H5Type type = compoundTypeOf<SampleRecord>();
  const auto& layout = layoutOf<SampleRecord>();
  ASSERT_EQ(H5Tget_nmembers(type.get()), static_cast<int>(layout.columns.size()));
  EXPECT_EQ(H5Tget_size(type.get()), sizeof(SampleRecord));
  for (unsigned i = 0; i < layout.columns.size(); ++i) {
    char* name = H5Tget_member_name(type.get(), i);
    EXPECT_EQ(std::string(name), layout.columns[i].name);
    EXPECT_EQ(H5Tget_member_offset(type.get(), i), layout.columns[i].offset);
    H5free_memory(name);
  }
}

// /transports/<name>'s settings: the schema declares the keys each transport
// declares with its entry (TransportEntry::settings), no more and no fewer.
TEST(Schema, TransportSettingsAreTheTransportsKeys) {
  const YAML::Node declared = YAML::LoadFile(schemaPath)["transport_settings"];
  ASSERT_TRUE(declared && declared.IsMap()) << "src/output/schema.yaml has no transport_settings: mapping";
  std::map<std::string, std::vector<std::string>> inSchema;
  for (const auto& entry : declared) inSchema[entry.first.Scalar()] = entry.second.as<std::vector<std::string>>();
  std::map<std::string, std::vector<std::string>> ofTransports;
  for (const auto& [name, rules] : transport::transportSettingsRules()) ofTransports[name] = rules.keys;
  EXPECT_EQ(inSchema, ofTransports) << "src/output/schema.yaml's transport_settings differ from the keys the "
                                       "transports declare (transport/<Name>Transport.cpp): declare a new key there";
}

TEST(KindTable, RowsOfAnotherRecordAreRefused) {
  auto samples = KindTable::of<SampleRecord>("t");
  const std::vector<CounterRecord> counters(1);
  EXPECT_THROW(samples.append(std::span<const CounterRecord>(counters)), std::logic_error);
  const std::vector<SampleRecord> rows{{1, 2, 3, 4, 5, 6, 7, 1}, {8, 9, 10, 11, 12, 13, 14, 2}};
  samples.append(std::span<const SampleRecord>(rows));
  const auto back = samples.rowsAs<SampleRecord>();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].t_done_ns, 13);
  EXPECT_EQ(back[1].level, 2);
}

}  // namespace
}  // namespace fabscope::output
