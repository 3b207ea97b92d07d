#pragma once
// Resources a kind keeps from one test instance to the next within a run,
// named by the kind (e.g. an NCCL communicator per set of measuring ranks:
// creating one per instance costs a second each, and gives every size its
// own communicator). Destroyed when the run ends.
#include <map>
#include <memory>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

namespace fabscope::suite {

// What a kind keeps in the cache derives from this.
class RunResource {
 public:
  virtual ~RunResource() = default;
};

class RunCache {
 public:
  // The resource of type `Resource` under `key`, or null when there is none.
  template <typename Resource>
  Resource* find(const std::string& key) {
    const auto it = slots_.find({std::type_index(typeid(Resource)), key});
    return it == slots_.end() ? nullptr : static_cast<Resource*>(it->second.get());
  }
  // Stores `resource` under `key`, replacing (destroying) the one there.
  template <typename Resource>
  Resource& put(const std::string& key, std::unique_ptr<Resource> resource) {
    auto& slot = slots_[{std::type_index(typeid(Resource)), key}];
    slot = std::move(resource);
    return static_cast<Resource&>(*slot);
  }

  // After a missed deadline: what the kinds kept may be in use by transfers
  // still in flight, so it is kept alive but never handed out again (the
  // process then exits without running the destructors; see Runner).
  void retire() {
    for (auto& [key, value] : slots_) retired_.push_back(std::move(value));
    slots_.clear();
  }

 private:
  std::map<std::pair<std::type_index, std::string>, std::unique_ptr<RunResource>> slots_;
  std::vector<std::unique_ptr<RunResource>> retired_;
};

}  // namespace fabscope::suite
