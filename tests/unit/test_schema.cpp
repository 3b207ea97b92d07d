// The C++ records and their HDF5 types against the one declaration of the
// file's tables (src/output/schema.yaml): names, order and types of columns.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "output/ApiRecords.hpp"
#include "output/CollectiveRecords.hpp"
#include "output/KvRecords.hpp"
#include "output/MixRecords.hpp"
#include "output/Records.hpp"

namespace fabscope::output {
namespace {

std::string typeNameOf(hid_t t) {
  const auto cls = H5Tget_class(t);
  const auto size = H5Tget_size(t);
  if (cls == H5T_STRING) return "str[" + std::to_string(size) + "]";
  if (cls == H5T_FLOAT && size == 8) return "float64";
  if (cls == H5T_INTEGER) {
    const bool isSigned = H5Tget_sign(t) == H5T_SGN_2;
    return std::string(isSigned ? "int" : "uint") + std::to_string(size * 8);
  }
  return "?";
}

template <typename Record>
std::vector<std::string> columnsOf() {
  const H5Type type = compoundTypeOf<Record>();
  std::vector<std::string> out;
  const int n = H5Tget_nmembers(type.get());
  for (int i = 0; i < n; ++i) {
    char* name = H5Tget_member_name(type.get(), static_cast<unsigned>(i));
    const hid_t member = H5Tget_member_type(type.get(), static_cast<unsigned>(i));
    out.push_back(std::string(name) + " " + typeNameOf(member));
    H5Tclose(member);
    H5free_memory(name);
  }
  return out;
}

std::vector<std::string> declared(const std::string& table) {
  const auto schema = YAML::LoadFile(std::string(FABSCOPE_SOURCE_DIR) + "/src/output/schema.yaml");
  std::vector<std::string> out;
  for (const auto& column : schema["tables"][table])
    out.push_back(column[0].as<std::string>() + " " + column[1].as<std::string>());
  return out;
}

TEST(Schema, RecordsMatchTheDeclaration) {
  EXPECT_EQ(columnsOf<RankRecord>(), declared("ranks"));
  EXPECT_EQ(columnsOf<SampleRecord>(), declared("samples"));
  EXPECT_EQ(columnsOf<SummaryRecord>(), declared("summary"));
  EXPECT_EQ(columnsOf<ScopeRecord>(), declared("scopes"));
  EXPECT_EQ(columnsOf<EventRecord>(), declared("events"));
  EXPECT_EQ(columnsOf<CounterRecord>(), declared("counters"));
  EXPECT_EQ(columnsOf<ValidityRecord>(), declared("validity"));
  EXPECT_EQ(columnsOf<KvRequestRecord>(), declared("requests"));
  EXPECT_EQ(columnsOf<AllToAllRankRecord>(), declared("alltoall_ranks"));
  EXPECT_EQ(columnsOf<ApiRequestRecord>(), declared("api_requests"));
  EXPECT_EQ(columnsOf<MixClassRecord>(), declared("mix_classes"));
}

TEST(Schema, EveryDeclaredTableIsChecked) {
  const auto schema = YAML::LoadFile(std::string(FABSCOPE_SOURCE_DIR) + "/src/output/schema.yaml");
  EXPECT_EQ(schema["tables"].size(), 11u) << "a table was added to schema.yaml: check its record above";
}

}  // namespace
}  // namespace fabscope::output
