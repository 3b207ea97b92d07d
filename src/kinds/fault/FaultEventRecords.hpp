#pragma once
// The fault drill's records: rows of /tests/NNNN/events (docs/file-format.md),
// every survivor's timeline on the global clock, written by the client.
#include <cstdint>
#include <vector>

#include "output/RecordLayout.hpp"

namespace fabscope::suite::fault_drill {

struct EventRecord {
  std::int32_t rank;
  std::int64_t t_ns;
  char kind[32];
  std::int32_t peer;
  char detail[160];
  static std::vector<output::Column> columns();
};

inline std::vector<output::Column> EventRecord::columns() {
  using R = EventRecord;
  using output::column;
  return {column("rank", &R::rank), column("t_ns", &R::t_ns, "ns"), column("kind", &R::kind), column("peer", &R::peer),
          column("detail", &R::detail)};
}

}  // namespace fabscope::suite::fault_drill
