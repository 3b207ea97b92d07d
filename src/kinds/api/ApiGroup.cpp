// The `api` traffic of one group of ranks, shared by the `api` kind and the
// `mix` kind's front-end class (ApiTraffic.hpp says what runs on the wire).
#include <map>
#include <sstream>

#include "kinds/api/ApiTraffic.hpp"
#include "runtime/EveryRanksLine.hpp"

namespace fabscope::suite::api {
namespace {

// Where every rank of the group listens (servers) or connects from (clients).
struct GroupEndpoints {
  std::vector<api::Endpoint> servers;
  std::vector<int> serverRanks;  // world ranks
  std::vector<std::uint32_t> clientAddresses;
};

// Collective: each rank's address and (servers) port, to every rank.
GroupEndpoints exchangeEndpoints(const ApiConfig& c, const runtime::Communicator& group,
                                 const std::vector<int>& participants, const api::LocalAddress& address,
                                 const api::ApiServer* server, const runtime::Deadline& deadline) {
  const std::int64_t mine = (static_cast<std::int64_t>(address.ipv4) << 16) | (server ? server->port() : 0);
  const auto endpoints = group.allgather(mine, deadline);
  GroupEndpoints out;
  for (int r = 0; r < group.size(); ++r) {
    const auto e = endpoints[static_cast<std::size_t>(r)];
    const auto ipv4 = static_cast<std::uint32_t>(static_cast<std::uint64_t>(e) >> 16);
    if (r < c.clients) {
      out.clientAddresses.push_back(ipv4);
    } else {
      out.servers.push_back({ipv4, static_cast<std::uint16_t>(e & 0xffff)});
      out.serverRanks.push_back(participants[static_cast<std::size_t>(r)]);
    }
  }
  return out;
}

// Collective: the requests that did not end "ok", by server rank and status,
// as "rank 3 (host): timeout 2 reset 1; ..." on every rank.
std::string errorsByServer(const std::vector<ApiRequestRecord>& rows, const runtime::Communicator& group,
                           const runtime::RankIdentity& identity, const runtime::Deadline& deadline) {
  std::map<std::pair<int, std::string>, int> errors;
  for (const auto& r : rows)
    if (std::string(r.status) != "ok") ++errors[{r.server_rank, r.status}];
  std::string myErrors;
  for (const auto& [key, count] : errors)
    myErrors += std::to_string(key.first) + " " + key.second + " " + std::to_string(count) + "\n";
  const auto allErrors = group.gatherStrings(myErrors, 0, deadline);
  std::string named;
  if (group.rank() == 0) {
    std::map<int, std::map<std::string, int>> byServer;
    for (const auto& text : allErrors) {
      std::istringstream in(text);
      int rank, count;
      std::string status;
      while (in >> rank >> status >> count) byServer[rank][status] += count;
    }
    for (const auto& [rank, statuses] : byServer) {
      named += (named.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) + " (" +
               identity.hostOfRank[static_cast<std::size_t>(rank)] + "):";
      for (const auto& [status, count] : statuses) named += " " + status + " " + std::to_string(count);
    }
  }
  return group.broadcastString(named, 0, deadline);
}

// Where this rank's self-test hooks spoil a byte: the hooks' indexes checked
// against the test (a hook that could never fire would let its test pass
// without spoiling anything). The same on every rank, so all throw alike.
struct Spoils {
  int request = -1;  // this client's request to spoil, or -1
  SpoilAt chunk;     // this server's answer chunk to spoil
};
Spoils spoilsOf(const SelfTestHooks& hooks, const ApiConfig& c, int groupRank) {
  const int total = c.totalRequestsPerClient();
  Spoils out;
  if (hooks.apiCorruptRequest) {
    const int request = hooks.apiCorruptRequestIndex < 0 ? c.warmupRequests : hooks.apiCorruptRequestIndex;
    if (request >= total || hooks.apiCorruptRequestClient >= c.clients)
      throw RuntimeFailure("--self-test api-corrupt-request: client " + std::to_string(hooks.apiCorruptRequestClient) +
                           ", request " + std::to_string(request) + " does not exist: the test has " +
                           std::to_string(c.clients) + " clients of " + std::to_string(total) +
                           " requests each (warm-up included)");
    if (hooks.apiCorruptRequestClient < 0 || hooks.apiCorruptRequestClient == groupRank) out.request = request;
  }
  if (hooks.apiCorruptChunk) {
    // Without an index: the first answer to any measured request.
    const int request = hooks.apiCorruptChunkRequest;
    if (request >= total || hooks.apiCorruptChunkIndex >= c.chunks)
      throw RuntimeFailure("--self-test api-corrupt-chunk: request " + std::to_string(request) + ", chunk " +
                           std::to_string(hooks.apiCorruptChunkIndex) + " does not exist: the test has " +
                           std::to_string(total) + " requests per client (warm-up included) of " +
                           std::to_string(c.chunks) + " chunks");
    out.chunk = request < 0 ? SpoilAt{c.warmupRequests, total - 1, hooks.apiCorruptChunkIndex}
                            : SpoilAt{request, request, hooks.apiCorruptChunkIndex};
  }
  return out;
}

}  // namespace

GroupRun runApiGroup(const ApiConfig& c, const runtime::Communicator& group, const std::vector<int>& participants,
                     int worldRank, const runtime::RankIdentity& identity, std::uint64_t seed, SampleBuffer& samples,
                     const runtime::ClockSync& clock, const runtime::Deadline& deadline,
                     const SelfTestHooks& selfTest) {
  const int g = group.rank(), me = worldRank;
  const bool client = g < c.clients;
  const Spoils spoils = spoilsOf(selfTest, c, g);

  // Sockets first, so every server listens before any client is told its port.
  std::string problem;
  api::LocalAddress address;
  std::unique_ptr<api::ApiServer> server;
  try {
    address = api::chooseAddress(c.interface, identity.nic);
    if (!client) server = std::make_unique<api::ApiServer>(c, address, std::vector<std::uint32_t>{}, spoils.chunk);
  } catch (const RuntimeFailure& e) {
    problem = "rank " + std::to_string(me) + " (" + identity.host + "): " + e.what();
  }
  if (const auto all = runtime::everyRanksProblems(group, problem, deadline); !all.empty())
    throw RuntimeFailure("api: " + all);
  auto endpoints = exchangeEndpoints(c, group, participants, address, server.get(), deadline);

  MPI_Request finished;
  std::vector<ApiRequestRecord> rows, warmupFailures;
  api::ServerCounts counts;
  std::int64_t verified = 0;
  if (client) {
    auto result = api::runClient(c, address, g, me, endpoints.servers, endpoints.serverRanks, seed, samples, clock,
                                 deadline, spoils.request);
    rows = std::move(result.rows);
    warmupFailures = std::move(result.warmupFailures);
    verified = result.verified;
    runtime::checkMpi(MPI_Ibarrier(group.handle(), &finished), "MPI_Ibarrier(api)");
    group.complete(finished, deadline, "the other api ranks to finish");
  } else {
    server->allow(endpoints.clientAddresses);
    runtime::checkMpi(MPI_Ibarrier(group.handle(), &finished), "MPI_Ibarrier(api)");
    counts = server->serve(finished, deadline);
    server.reset();  // the listening socket closes with the test
  }

  // Errors by server rank and status, named on every rank's verdict.
  GroupRun out;
  out.errorsByServer = errorsByServer(rows, group, identity, deadline);
  out.warmupErrorsByServer = errorsByServer(warmupFailures, group, identity, deadline);
  const auto sum = [&](std::int64_t v) { return group.allreduceSum(v, deadline); };
  out.warmupFailed = sum(static_cast<std::int64_t>(warmupFailures.size()));
  out.measured = sum(static_cast<std::int64_t>(rows.size()));
  out.ok = sum(verified);
  out.totals = {sum(counts.answered),         sum(counts.busy),    sum(counts.badRequests),
                sum(counts.outsidersRefused), sum(counts.stalled), sum(counts.aborted)};
  out.rows = std::move(rows);
  out.address = address;
  out.servers = std::move(endpoints.servers);
  out.serverRanks = std::move(endpoints.serverRanks);
  return out;
}

}  // namespace fabscope::suite::api
