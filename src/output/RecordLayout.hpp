#pragma once
// A table's row described once: each column's name in the file, the member it
// is read from, its type (deduced from the member) and its unit. The HDF5
// compound type, the type-erased kind tables (output/KindTable.hpp) and the
// check of src/output/schema.yaml (tests/unit/test_schema.cpp) all derive from
// this description, so a column is named in its record and in the docs only.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "output/Hdf5.hpp"

namespace fabscope::output {

enum class ColumnType { int32, int64, uint32, uint8, float64, text };

struct Column {
  std::string_view name;  // in the file
  std::size_t offset = 0;
  ColumnType type = ColumnType::int64;
  std::size_t bytes = 0;  // of the member (a text column's fixed length)
  std::string_view unit;  // "ns", "B", "GB/s", ... ; "" for counts, ranks, labels
};

struct RecordLayout {
  std::size_t rowBytes = 0;
  std::vector<Column> columns;
};

namespace detail {
template <typename Member>
constexpr ColumnType columnTypeOf() {
  if constexpr (std::is_same_v<Member, std::int32_t>)
    return ColumnType::int32;
  else if constexpr (std::is_same_v<Member, std::int64_t>)
    return ColumnType::int64;
  else if constexpr (std::is_same_v<Member, std::uint32_t>)
    return ColumnType::uint32;
  else if constexpr (std::is_same_v<Member, std::uint8_t>)
    return ColumnType::uint8;
  else if constexpr (std::is_same_v<Member, double>)
    return ColumnType::float64;
  else {
    static_assert(std::is_array_v<Member> && std::is_same_v<std::remove_extent_t<Member>, char>,
                  "a column is int32, int64, uint32, uint8, double or a fixed char array");
    return ColumnType::text;
  }
}
}  // namespace detail

// One column of `Record`, read from `member`.
template <typename Record, typename Member>
Column column(std::string_view name, Member Record::*member, std::string_view unit = {}) {
  static_assert(std::is_standard_layout_v<Record> && std::is_trivially_copyable_v<Record>,
                "a record is a plain struct: memory layout = file layout");
  const Record probe{};
  const auto offset = reinterpret_cast<const char*>(&(probe.*member)) - reinterpret_cast<const char*>(&probe);
  return {name, static_cast<std::size_t>(offset), detail::columnTypeOf<Member>(), sizeof(Member), unit};
}

// The layout of `Record`, from its `static std::vector<Column> columns()`,
// built once.
template <typename Record>
const RecordLayout& layoutOf() {
  static const RecordLayout layout{sizeof(Record), Record::columns()};
  return layout;
}

// The schema's spelling of a column's type: int32, int64, uint32, uint8, float64, str[N].
std::string schemaTypeName(const Column& column);

// The HDF5 compound type of rows of `layout` (memory layout = file layout).
H5Type compoundTypeOf(const RecordLayout& layout);

template <typename Record>
H5Type compoundTypeOf() {
  return compoundTypeOf(layoutOf<Record>());
}

}  // namespace fabscope::output
