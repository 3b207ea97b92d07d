#pragma once
// The scenario keys of the `api` kind (front-end request traffic), read and
// checked once at load. Client ranks (the load balancer's side) open a TCP
// connection per request to a server rank (a model server), send the request,
// and receive a streamed answer: a first chunk after `service_time`, then the
// other chunks every `chunk_interval`. Arrivals are open-loop Poisson at
// `rate` per client, at most `max_in_flight` at once per client.
#include <cstdint>
#include <string>

#include "scenario/Scenario.hpp"

namespace fabscope::scenario {
struct TestSource;
}

namespace fabscope::suite::api {

struct ApiConfig final : scenario::KindConfig {
  int clients = 0;                   // ranks [0, clients) of the group; the rest serve
  double ratePerSecond = 0;          // Poisson arrivals per client
  int maxInFlight = 8;               // per client: arrivals beyond it wait (the wait is recorded)
  int requests = 0;                  // measured requests per client
  int warmupRequests = 0;            // per client, before the measured ones
  std::int64_t requestBytes = 0;     // the request a client sends (prompt and headers)
  int chunks = 0;                    // response chunks (the first, then the tokens)
  std::int64_t chunkBytes = 0;       // bytes of one chunk: the instance's size (at load: the largest size)
  double serviceSeconds = 0;         // server: request read -> first chunk (time to first token)
  double chunkIntervalSeconds = 0;   // server: between chunks (time per output token)
  double requestTimeoutSeconds = 0;  // client: a request not done by then is a timeout
  int maxConnections = 0;            // server: open connections at once; beyond it a request is refused as busy
  std::string interface;             // network interface to use; "" = the rank's fabric NIC, or its host's address
  std::string network;               // label recorded per request: fabric | frontend

  int totalRequestsPerClient() const { return warmupRequests + requests; }
};

// The kind's parse step (at load). Throws scenario::ScenarioError "file:line:column: message".
ApiConfig readApiConfig(const scenario::TestSpec& spec, const scenario::TestSource& source);

}  // namespace fabscope::suite::api
