#pragma once
// A kind's own tables under /tests/NNNN (docs/file-format.md): typed rows, so
// the recorder writes them with their declared HDF5 types and a kind never
// touches the result file. A new table type is one more alternative here.
#include <string>
#include <variant>
#include <vector>

#include "output/ApiRecords.hpp"
#include "output/CollectiveRecords.hpp"
#include "output/KvRecords.hpp"
#include "output/MixRecords.hpp"
#include "output/Records.hpp"

namespace fabscope::output {

using KindTableRows =
    std::variant<std::vector<EventRecord>, std::vector<KvRequestRecord>, std::vector<AllToAllRankRecord>,
                 std::vector<ApiRequestRecord>, std::vector<MixClassRecord>>;

struct KindTable {
  std::string name;  // the dataset under the instance's group, e.g. "requests"
  KindTableRows rows;
};

}  // namespace fabscope::output
