// Front-end API traffic (issue 17): ranks [0, clients) of the measuring group
// are the load balancer's side, the others model servers. Each server listens
// on its chosen interface; the addresses and ports are exchanged over MPI;
// each client sends open-loop Poisson requests over TCP (ApiTraffic.hpp) and
// measures connect, time to first byte, the gaps between the streamed chunks
// and completion. Every byte of requests and answers is checked. A request
// that ends in an error (refused, reset, timeout, busy, bad data) fails the
// instance, named by server rank and host.
#include <algorithm>
#include <map>
#include <sstream>

#include "kinds/KindFactories.hpp"
#include "kinds/api/ApiConfig.hpp"
#include "kinds/api/ApiTraffic.hpp"

namespace fabscope::suite {
namespace {

using api::ApiConfig;

std::string numberText(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// "rank 2 198.18.0.3:40123, ...": where each server listened.
std::string endpointsText(const std::vector<api::Endpoint>& servers, const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < servers.size(); ++i)
    out += (i ? ", " : "") + std::string("rank ") + std::to_string(ranks[i]) + " " + api::ipv4Text(servers[i].ipv4) +
           ":" + std::to_string(servers[i].port);
  return out;
}

// Every rank's problem (or ""), the same joined text on every rank.
std::string agreedProblems(const runtime::Communicator& group, const std::string& mine, const runtime::Deadline& deadline) {
  const auto all = group.gatherStrings(mine, 0, deadline);
  std::string joined;
  for (const auto& p : all)
    if (!p.empty()) joined += (joined.empty() ? "" : "; ") + p;
  return group.broadcastString(joined, 0, deadline);
}

class ApiKind final : public Kind {
 public:
  std::string name() const override { return "api"; }
  std::string summary() const override {
    return "front-end API traffic: clients send open-loop requests over TCP, servers stream answers in chunks; "
           "connect, time to first byte, chunk gaps, completion; every byte checked";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"clients", "rate", "max_in_flight", "requests", "warmup_requests", "request_bytes", "chunks",
                   "service_time", "chunk_interval", "request_timeout", "max_connections",
                   "interface", "network"};
    r.minRanks = 2;
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource& source) {
      // Its own TCP sockets carry it: the run's default transport (mpi) on host
      // memory is the only setting that does not pretend otherwise.
      if (spec.transport != "mpi" || spec.memory != "host")
        throw scenario::ScenarioError(spec.where(spec.transport != "mpi" ? "transport" : "memory") + ": test '" +
                                      spec.name + "' (api) runs over its own TCP sockets on host memory: "
                                      "'transport' and 'memory' do not apply (leave them out)");
      return std::make_shared<ApiConfig>(api::readApiConfig(spec, source));
    };
    return r;
  }

  bool usesTransport() const override { return false; }

  InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const override {
    const auto& spec = *instance.spec;
    ApiConfig c = scenario::configOf<ApiConfig>(spec);
    c.chunkBytes = instance.bytes;
    InstancePlan p;
    p.metric = Metric::latency;
    p.pattern = "client-server";
    p.maxSamplesPerRank = static_cast<std::int64_t>(c.requests) * (2 + c.chunks);
    const std::int64_t open = std::min<std::int64_t>(c.maxConnections, std::int64_t{c.clients} * c.maxInFlight);
    p.bufferBytesPerRank = std::max<std::int64_t>(open * (16 + c.chunkBytes),
                                                  static_cast<std::int64_t>(c.maxInFlight) * (24 + c.requestBytes)) +
                           static_cast<std::int64_t>(c.requests) * static_cast<std::int64_t>(sizeof(output::ApiRequestRecord));
    const int ranks = measuringRanksOf(spec, worldSize, 2);
    p.description = std::to_string(c.clients) + " clients -> " + std::to_string(ranks - c.clients) +
                    " servers over TCP (" + (c.interface.empty() ? std::string("fabric NIC") : c.interface) + ", " +
                    c.network + "): " + numberText(c.ratePerSecond) + " req/s per client (Poisson, " +
                    std::to_string(c.maxInFlight) + " in flight), " + std::to_string(c.requestBytes) + " B request, " +
                    std::to_string(c.chunks) + " x " + std::to_string(c.chunkBytes) + " B chunks every " +
                    numberText(c.chunkIntervalSeconds * 1e3) + " ms after " + numberText(c.serviceSeconds * 1e3) + " ms";
    return p;
  }

  Outcome run(RunContext& ctx) const override {
    const auto& spec = *ctx.instance.spec;
    ApiConfig config = scenario::configOf<ApiConfig>(spec);
    config.chunkBytes = ctx.instance.bytes;
    const ApiConfig& c = config;
    const int n = ctx.group.size(), g = ctx.group.rank(), me = ctx.world.rank();
    const bool client = g < c.clients;
    const auto& host = ctx.identity.host;

    // Sockets first, so every server listens before any client is told its port.
    std::string problem;
    api::LocalAddress address;
    std::unique_ptr<api::ApiServer> server;
    try {
      address = api::chooseAddress(c.interface, ctx.identity.nic);
      if (!client) server = std::make_unique<api::ApiServer>(c, address, std::vector<std::uint32_t>{});
    } catch (const RuntimeFailure& e) {
      problem = "rank " + std::to_string(me) + " (" + host + "): " + e.what();
    }
    if (const auto all = agreedProblems(ctx.group, problem, ctx.deadline); !all.empty())
      throw RuntimeFailure("api: " + all);
    const std::int64_t mine = (static_cast<std::int64_t>(address.ipv4) << 16) | (server ? server->port() : 0);
    const auto endpoints = ctx.group.allgather(mine, ctx.deadline);
    std::vector<api::Endpoint> servers;
    std::vector<int> serverRanks;
    std::vector<std::uint32_t> clientAddresses;
    for (int r = 0; r < n; ++r) {
      const auto e = endpoints[static_cast<std::size_t>(r)];
      const auto ipv4 = static_cast<std::uint32_t>(static_cast<std::uint64_t>(e) >> 16);
      if (r < c.clients) {
        clientAddresses.push_back(ipv4);
      } else {
        servers.push_back({ipv4, static_cast<std::uint16_t>(e & 0xffff)});
        serverRanks.push_back(ctx.participants[static_cast<std::size_t>(r)]);
      }
    }

    Outcome outcome;
    MPI_Request finished;
    std::vector<output::ApiRequestRecord> rows;
    api::ServerCounts counts;
    std::int64_t verified = 0;
    if (client) {
      auto result = api::runClient(c, address, g, me, servers, serverRanks, ctx.caseSeed, ctx.samples, ctx.clock,
                                   ctx.deadline);
      rows = std::move(result.rows);
      verified = result.verified;
      runtime::checkMpi(MPI_Ibarrier(ctx.group.handle(), &finished), "MPI_Ibarrier(api)");
      ctx.group.complete(finished, ctx.deadline, "the other api ranks to finish");
    } else {
      server->allow(clientAddresses);
      runtime::checkMpi(MPI_Ibarrier(ctx.group.handle(), &finished), "MPI_Ibarrier(api)");
      counts = server->serve(finished, ctx.deadline);
      server.reset();  // the listening socket closes with the test
    }

    // Errors by server rank and status, named on every rank's verdict.
    std::map<std::pair<int, std::string>, int> errors;
    for (const auto& r : rows)
      if (std::string(r.status) != "ok") ++errors[{r.server_rank, r.status}];
    std::string myErrors;
    for (const auto& [key, count] : errors)
      myErrors += std::to_string(key.first) + " " + key.second + " " + std::to_string(count) + "\n";
    const auto allErrors = ctx.group.gatherStrings(myErrors, 0, ctx.deadline);
    const auto sum = [&](std::int64_t v) { return ctx.group.allreduceSum(v, ctx.deadline); };
    const std::int64_t measured = sum(static_cast<std::int64_t>(rows.size())), ok = sum(verified);
    const std::int64_t answered = sum(counts.answered), busy = sum(counts.busy), bad = sum(counts.badRequests),
                       outsiders = sum(counts.outsidersRefused), stalled = sum(counts.stalled),
                       aborted = sum(counts.aborted);
    std::string named;
    if (ctx.group.rank() == 0) {
      std::map<int, std::map<std::string, int>> byServer;
      for (const auto& text : allErrors) {
        std::istringstream in(text);
        int rank, count;
        std::string status;
        while (in >> rank >> status >> count) byServer[rank][status] += count;
      }
      for (const auto& [rank, statuses] : byServer) {
        named += (named.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) + " (" +
                 ctx.identity.hostOfRank[static_cast<std::size_t>(rank)] + "):";
        for (const auto& [status, count] : statuses) named += " " + status + " " + std::to_string(count);
      }
    }
    named = ctx.group.broadcastString(named, 0, ctx.deadline);
    if (measured > ok)
      ctx.verdict.fail(std::to_string(measured - ok) + " of " + std::to_string(measured) +
                       " api requests failed, by server: " + named);
    outcome.tables.push_back({"api_requests", std::move(rows)});
    if (ctx.group.rank() == 0)
      outcome.attributes = {
          {"clients", std::int64_t{c.clients}},
          {"servers", std::int64_t{n - c.clients}},
          {"rate_per_s", c.ratePerSecond},
          {"max_in_flight", std::int64_t{c.maxInFlight}},
          {"requests_per_client", std::int64_t{c.requests}},
          {"warmup_requests", std::int64_t{c.warmupRequests}},
          {"request_bytes", c.requestBytes},
          {"chunks", std::int64_t{c.chunks}},
          {"chunk_bytes", c.chunkBytes},
          {"service_time_s", c.serviceSeconds},
          {"chunk_interval_s", c.chunkIntervalSeconds},
          {"request_timeout_s", c.requestTimeoutSeconds},
          {"max_connections", std::int64_t{c.maxConnections}},
          {"network", c.network},
          {"interface", address.interface},
          {"protocol", std::string("fabscope framed TCP, one connection per request")},
          {"server_endpoints", endpointsText(servers, serverRanks)},
          {"requests_measured", measured},
          {"requests_ok", ok},
          {"request_errors", named},
          {"answered_by_servers", answered},
          {"refused_busy", busy},
          {"bad_requests", bad},
          {"outsiders_refused", outsiders},
          {"stalled_connections", stalled},
          {"aborted_connections", aborted},
      };
    return outcome;
  }

  std::vector<output::KindTable> tables() const override {
    return {{"api_requests", std::vector<output::ApiRequestRecord>{}}};
  }
};

}  // namespace

std::unique_ptr<Kind> makeApiKind() { return std::make_unique<ApiKind>(); }

}  // namespace fabscope::suite
