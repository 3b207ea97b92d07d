#pragma once
// Resources a kind keeps from one test instance to the next within a run,
// named by the kind (e.g. an NCCL communicator per set of measuring ranks:
// creating one per instance costs a second each, and gives every size its
// own communicator). Destroyed when the run ends.
#include <map>
#include <memory>
#include <string>

namespace fabscope::suite {

class RunCache {
 public:
  // The slot for `key`; empty until a kind fills it.
  std::shared_ptr<void>& slot(const std::string& key) { return slots_[key]; }

 private:
  std::map<std::string, std::shared_ptr<void>> slots_;
};

}  // namespace fabscope::suite
