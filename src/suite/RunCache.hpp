#pragma once
// Resources a kind keeps from one test instance to the next within a run,
// named by the kind (e.g. an NCCL communicator per set of measuring ranks:
// creating one per instance costs a second each, and gives every size its
// own communicator). Destroyed when the run ends.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fabscope::suite {

class RunCache {
 public:
  // The slot for `key`; empty until a kind fills it.
  std::shared_ptr<void>& slot(const std::string& key) { return slots_[key]; }

  // After a missed deadline: what the kinds kept may be in use by transfers
  // still in flight, so it is kept alive but never handed out again (the
  // process then exits without running the destructors; see Runner).
  void retire() {
    for (auto& [key, value] : slots_) retired_.push_back(std::move(value));
    slots_.clear();
  }

 private:
  std::map<std::string, std::shared_ptr<void>> slots_;
  std::vector<std::shared_ptr<void>> retired_;
};

}  // namespace fabscope::suite
