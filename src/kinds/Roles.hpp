#pragma once
// Which ranks measure (canaries) and which make neighbour traffic
// (congestors). The same case gets the same canaries under every condition,
// so quiet and congested results compare the same ranks and links.
#include <cstdint>
#include <string>
#include <vector>

namespace fabscope::suite {

struct RoleSpec {
  int ranks = 0;                     // ranks the test uses in all; 0 = every rank
  int canaries = 0;                  // 0 = default (see assignRoles)
  double canaryFraction = 0;         // used when > 0 instead of `canaries`
  std::string placement = "spread";  // spread | packed | random
  int group = 0;                     // which group of `canaries` consecutive ranks in placement order measures
};

struct RoleAssignment {
  std::vector<int> canaries;    // world ranks, in measuring order (group index = position)
  std::vector<int> congestors;  // world ranks
  std::string placement;
  bool isCanary(int rank) const;
  bool isCongestor(int rank) const;
};

// `hostOfRank[r]` names rank r's host. Defaults: every used rank measures
// when the test has no congested condition; otherwise half of them (rounded
// down to even, at least `minCanaries`) measure and the rest make load.
// spread: canaries on as many different hosts as possible (consecutive
// canaries sit on different hosts); packed: hosts filled in rank order;
// random: a shuffle drawn from `seed`. Group g (roles.groups) takes the
// canaries from positions g x canaries .. of that order, the rest make load.
RoleAssignment assignRoles(const RoleSpec& spec, const std::vector<std::string>& hostOfRank, int minCanaries,
                           bool hasCongestedCondition, std::uint64_t seed);

std::string joinRanks(const std::vector<int>& ranks);

// How many ranks measure (without placing them), for planning.
int canaryCount(const RoleSpec& spec, int worldSize, int minCanaries, bool hasCongestedCondition);

}  // namespace fabscope::suite
