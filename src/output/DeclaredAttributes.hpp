#pragma once
// A kind's attributes of /tests/NNNN, declared once in the kind's code
// (Kind::declaredAttributes): the `kinds:` part of src/output/schema.yaml's
// `instance_attributes` is printed from these declarations, as its `tables:`
// are from the records (tests/unit/test_schema.cpp; FABSCOPE_SCHEMA_WRITE=1
// rewrites it). A kind declares them in a table of its class, an entry such as
// {"probe_rank", integer, sometimes, "with a probe"} (with `using enum` of both
// enums in the class). The runner's own attributes (`every`, the `when` groups) are
// declared in the schema itself.
#include <span>

namespace fabscope::output {

// The schema's attribute types: int (int64), float (float64), str.
enum class AttributeType { integer, real, text };

inline const char* schemaTypeName(AttributeType type) {
  switch (type) {
    case AttributeType::integer:
      return "int";
    case AttributeType::real:
      return "float";
    case AttributeType::text:
      return "str";
  }
  return "?";
}

// Whether every instance of the kind writes it (a skipped instance aside), or only
// some (the schema's `optional`).
enum class Presence { always, sometimes };

// A constant: a kind's declarations are a constexpr table in its class.
struct DeclaredAttribute {
  const char* name;  // as written in the file
  AttributeType type;
  Presence presence = Presence::always;
  const char* note = "";  // printed above it in the schema, one comment line per line
};

using DeclaredAttributes = std::span<const DeclaredAttribute>;

}  // namespace fabscope::output
