#include "output/RecordLayout.hpp"

#include <string>

namespace fabscope::output {

std::string schemaTypeName(const Column& column) {
  switch (column.type) {
    case ColumnType::int32:
      return "int32";
    case ColumnType::int64:
      return "int64";
    case ColumnType::uint32:
      return "uint32";
    case ColumnType::uint8:
      return "uint8";
    case ColumnType::float64:
      return "float64";
    case ColumnType::text:
      return "str[" + std::to_string(column.bytes) + "]";
  }
  return "?";
}

namespace {

hid_t nativeTypeOf(ColumnType type) {
  switch (type) {
    case ColumnType::int32:
      return H5T_NATIVE_INT32;
    case ColumnType::int64:
      return H5T_NATIVE_INT64;
    case ColumnType::uint32:
      return H5T_NATIVE_UINT32;
    case ColumnType::uint8:
      return H5T_NATIVE_UINT8;
    case ColumnType::float64:
      return H5T_NATIVE_DOUBLE;
    case ColumnType::text:
      break;
  }
  return H5I_INVALID_HID;
}

}  // namespace

H5Type compoundTypeOf(const RecordLayout& layout) {
  H5Type type(H5Tcreate(H5T_COMPOUND, layout.rowBytes), "H5Tcreate");
  for (const auto& c : layout.columns) {
    const std::string name(c.name);
    H5Type text;
    hid_t member = nativeTypeOf(c.type);
    if (c.type == ColumnType::text) {
      text = fixedStringType(c.bytes);
      member = text.get();
    }
    checkH5(H5Tinsert(type.get(), name.c_str(), c.offset, member), "H5Tinsert " + name);
  }
  return type;
}

}  // namespace fabscope::output
