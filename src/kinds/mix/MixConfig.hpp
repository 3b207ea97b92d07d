#pragma once
// The scenario keys of the `mix` kind (the serving mix in one instance, issue
// 17 item 3), read and checked once at load. The measuring group splits into
// disjoint roles, in group-rank order, as a disaggregated deployment does:
//
//   layout: {prefill: P, decode: D, tp: T, frontend: F}
//     [0, P)          prefill ranks: push each request's KV cache to a decode rank
//     [P, P+D)        decode ranks, in TP groups of T consecutive ranks: a token
//                     step every `step_interval` = one all-reduce in each TP
//                     group, then (models with experts) one MoE dispatch +
//                     combine over all decode ranks (expert parallel)
//     [P+D, P+D+F)    front-end ranks: the first `clients` are the load
//                     balancer's side, the rest the model servers' HTTP ends
//
// The API class takes the `api` kind's keys (clients, rate, requests, ...;
// api/ApiConfig.hpp) and the test's one size as its chunk bytes.
#include <cstdint>
#include <string>
#include <vector>

#include "kinds/api/ApiConfig.hpp"
#include "kinds/collectives/MoeRouting.hpp"
#include "scenario/Scenario.hpp"

namespace fabscope::scenario {
struct TestSource;
}

namespace fabscope::suite::mix {

// The traffic classes, in the order the isolated phase runs them.
enum class TrafficClass { allreduce = 0, alltoall = 1, kvpush = 2, api = 3 };
inline constexpr int kClassCount = 4;
const char* className(TrafficClass c);

enum class Role { prefill, decode, frontend, idle };

struct RoleSplit {
  int prefill = 0, decode = 0, tp = 1, frontend = 0;
  int used() const { return prefill + decode + frontend; }
  // Role of group rank g (idle: beyond the roles).
  Role roleOf(int g) const;
  // Decode ranks only: which TP group (0-based) and which rank in it.
  int tpGroupOf(int g) const { return (g - prefill) / tp; }
};

// Throws std::invalid_argument with what is wrong (decode not a multiple of
// tp, a role with too few ranks for the classes asked for, more ranks than
// `groupSize`).
void checkSplit(const RoleSplit& split, int groupSize, bool kv, bool api, int apiClients);

struct MixConfig final : scenario::KindConfig {
  RoleSplit roles;
  bool classEnabled[kClassCount] = {false, false, false, false};
  std::string modelName;
  double stepIntervalSeconds = 0.02;  // token-step cadence of the decode ranks
  std::int64_t decodeBatch = 8;       // tokens in flight per decode rank per step
  std::int64_t allreduceBytes = 0;    // per TP all-reduce: decode_batch x hidden x dtype bytes
  std::string allreduceFormula;
  moe::RoutingSpec routing;  // experts / top_k of the model (alltoall)
  std::int64_t dispatchTokenBytes = 0, combineTokenBytes = 0;
  double kvRatePerSecond = 20;         // Poisson request arrivals per prefill rank
  int kvRequests = 8;                  // measured KV pushes per prefill rank per phase
  std::int64_t kvBytesPerRequest = 0;  // one request's KV shard, prefill -> decode
  std::string kvFormula;
  api::ApiConfig api;  // chunkBytes = the test's size

  bool has(TrafficClass c) const { return classEnabled[static_cast<int>(c)]; }
};

// The kind's parse step (at load). Throws scenario::ScenarioError "file:line:column: message".
MixConfig readMixConfig(const scenario::TestSpec& spec, const scenario::TestSource& source);

}  // namespace fabscope::suite::mix
