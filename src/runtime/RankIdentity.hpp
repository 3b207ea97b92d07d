#pragma once
#include <string>
#include <vector>

#include "runtime/Mpi.hpp"

namespace fabscope::runtime {

// Who this rank is: host, position among its host's ranks, bound devices.
// Ranks are grouped by host *name*, not by shared memory, so ranks in the
// emulated cluster's namespaces count as different hosts.
struct RankIdentity {
  int rank = 0;
  int size = 1;
  std::string host;
  int localRank = 0;
  int localSize = 1;
  int pid = 0;
  int gpu = -1;
  std::string nic;
  int hostIndex = 0;  // index of this rank's host among all hosts (sorted by first rank)
  int hostCount = 1;
  std::vector<std::string> hostOfRank;  // every rank's host, on every rank
};

RankIdentity discoverRankIdentity(const Communicator& world, const Deadline& deadline);

}  // namespace fabscope::runtime
