// Front-end API traffic: ranks [0, clients) of the measuring group
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

#include "kinds/Kind.hpp"
#include "kinds/api/ApiConfig.hpp"
#include "kinds/api/ApiTraffic.hpp"
#include "runtime/NumberText.hpp"

namespace fabscope::suite {
namespace {

using api::ApiConfig;

using runtime::numberText;

// "rank 2 198.18.0.3:40123, ...": where each server listened.
std::string endpointsText(const std::vector<api::Endpoint>& servers, const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < servers.size(); ++i)
    out += (i ? ", " : "") + std::string("rank ") + std::to_string(ranks[i]) + " " + api::ipv4Text(servers[i].ipv4) +
           ":" + std::to_string(servers[i].port);
  return out;
}

class ApiKind final : public Kind {
 public:
  std::string name() const override { return "api"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {{"aborted_connections", integer},
                                                              {"answered_by_servers", integer},
                                                              {"bad_requests", integer},
                                                              {"chunk_bytes", integer},
                                                              {"chunk_interval_s", real},
                                                              {"chunks", integer},
                                                              {"clients", integer},
                                                              {"interface", text},
                                                              {"max_connections", integer},
                                                              {"max_in_flight", integer},
                                                              {"network", text},
                                                              {"outsiders_refused", integer},
                                                              {"protocol", text},
                                                              {"rate_per_s", real},
                                                              {"refused_busy", integer},
                                                              {"request_bytes", integer},
                                                              {"request_errors", text},
                                                              {"request_timeout_s", real},
                                                              {"requests_measured", integer},
                                                              {"requests_ok", integer},
                                                              {"requests_per_client", integer},
                                                              {"server_endpoints", text},
                                                              {"servers", integer},
                                                              {"service_time_s", real},
                                                              {"stalled_connections", integer},
                                                              {"warmup_requests", integer}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override {
    return "front-end API traffic: clients send open-loop requests over TCP, servers stream answers in chunks; "
           "connect, time to first byte, chunk gaps, completion; every byte checked";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"clients",         "rate",      "max_in_flight", "requests",       "warmup_requests",
                   "request_bytes",   "chunks",    "service_time",  "chunk_interval", "request_timeout",
                   "max_connections", "interface", "network"};
    r.minRanks = 2;
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource& source) {
      // Its own TCP sockets carry it: the run's default transport (mpi) on host
      // memory is the only setting that does not pretend otherwise.
      if (spec.transport != "mpi" || spec.memory != "host")
        throw scenario::ScenarioError(spec.where(spec.transport != "mpi" ? "transport" : "memory") + ": test '" +
                                      spec.name +
                                      "' (api) runs over its own TCP sockets on host memory: "
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
    p.bufferBytesPerRank =
        std::max<std::int64_t>(open * (16 + c.chunkBytes),
                               static_cast<std::int64_t>(c.maxInFlight) * (24 + c.requestBytes)) +
        static_cast<std::int64_t>(c.requests) * static_cast<std::int64_t>(sizeof(api::ApiRequestRecord));
    const int ranks = measuringRanksOf(spec, worldSize, 2);
    p.description = std::to_string(c.clients) + " clients -> " + std::to_string(ranks - c.clients) +
                    " servers over TCP (" + (c.interface.empty() ? std::string("fabric NIC") : c.interface) + ", " +
                    c.network + "): " + numberText(c.ratePerSecond) + " req/s per client (Poisson, " +
                    std::to_string(c.maxInFlight) + " in flight), " + std::to_string(c.requestBytes) + " B request, " +
                    std::to_string(c.chunks) + " x " + std::to_string(c.chunkBytes) + " B chunks every " +
                    numberText(c.chunkIntervalSeconds * 1e3) + " ms after " + numberText(c.serviceSeconds * 1e3) +
                    " ms";
    return p;
  }

  Outcome run(RunContext& ctx) const override {
    const auto& spec = *ctx.instance.spec;
    ApiConfig config = scenario::configOf<ApiConfig>(spec);
    config.chunkBytes = ctx.instance.bytes;
    const ApiConfig& c = config;
    const auto run = api::runApiGroup(c, ctx.group, ctx.participants, ctx.world.rank(), ctx.identity, ctx.caseSeed,
                                      ctx.samples, ctx.clock, ctx.deadline, ctx.selfTest);
    const int n = ctx.group.size();
    const auto& address = run.address;
    const auto& servers = run.servers;
    const auto& serverRanks = run.serverRanks;
    const std::int64_t measured = run.measured, ok = run.ok, answered = run.totals.answered, busy = run.totals.busy,
                       bad = run.totals.badRequests, outsiders = run.totals.outsidersRefused,
                       stalled = run.totals.stalled, aborted = run.totals.aborted;
    const std::string& named = run.errorsByServer;
    auto rows = run.rows;
    Outcome outcome;
    if (measured > ok)
      ctx.verdict.fail(std::to_string(measured - ok) + " of " + std::to_string(measured) +
                       " api requests failed, by server: " + named);
    if (run.warmupFailed > 0)
      ctx.verdict.fail(std::to_string(run.warmupFailed) +
                       " warm-up api requests failed their data check (not measured, but checked), by server: " +
                       run.warmupErrorsByServer);
    outcome.tables.push_back(output::KindTable::of("api_requests", rows));
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
    return {output::KindTable::of<api::ApiRequestRecord>("api_requests")};
  }
};

}  // namespace

std::unique_ptr<Kind> makeApiKind() { return std::make_unique<ApiKind>(); }

}  // namespace fabscope::suite
