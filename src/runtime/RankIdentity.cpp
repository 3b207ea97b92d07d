#include "runtime/RankIdentity.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>

namespace fabscope::runtime {
namespace {

constexpr std::size_t hostNameBytes = 64;

std::string firstListEntry(const char* env) {
  const char* v = std::getenv(env);
  if (!v || !*v) return {};
  std::string s(v);
  s = s.substr(0, s.find(','));
  return s.substr(0, s.find(':'));
}

}  // namespace

RankIdentity discoverRankIdentity(const Communicator& world, const Deadline& deadline) {
  RankIdentity id;
  id.rank = world.rank();
  id.size = world.size();
  id.pid = static_cast<int>(getpid());

  std::array<char, hostNameBytes> name{};
  gethostname(name.data(), name.size() - 1);
  id.host = name.data();

  std::vector<char> all(hostNameBytes * static_cast<std::size_t>(id.size));
  MPI_Request r;
  checkMpi(
      MPI_Iallgather(name.data(), hostNameBytes, MPI_CHAR, all.data(), hostNameBytes, MPI_CHAR, world.handle(), &r),
      "MPI_Iallgather(hostnames)");
  int done = 0;
  waitUntil(
      [&] {
        checkMpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test(hostnames)");
        return done != 0;
      },
      deadline, "the host names of all ranks");

  // Hosts are numbered in order of their first rank, not alphabetically.
  std::map<std::string, int> firstSeen;
  id.localSize = 0;
  for (int i = 0; i < id.size; ++i) {
    std::string h(all.data() + static_cast<std::size_t>(i) * hostNameBytes);
    firstSeen.emplace(h, static_cast<int>(firstSeen.size()));
    if (h == id.host) {
      ++id.localSize;
      if (i < id.rank) ++id.localRank;
    }
    id.hostOfRank.push_back(std::move(h));
  }
  id.hostCount = static_cast<int>(firstSeen.size());
  id.hostIndex = firstSeen.at(id.host);

  if (const char* g = std::getenv("FABSCOPE_GPU")) id.gpu = std::atoi(g);
  id.nic = firstListEntry("FABSCOPE_NIC");
  if (id.nic.empty()) id.nic = firstListEntry("UCX_NET_DEVICES");
  if (id.nic.empty()) id.nic = firstListEntry("NCCL_IB_HCA");
  return id;
}

}  // namespace fabscope::runtime
