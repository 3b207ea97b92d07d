#pragma once
// The front-end traffic of the `api` kind over plain TCP sockets: a minimal
// framed protocol rather than HTTP/1.1 with server-sent events, so what is
// measured is the network path and the kernel's TCP stack, with no parser or
// library between (an HTTP front end adds its own parsing on both ends; that
// is the server's cost, not the fabric's). One connection per request, as a
// load balancer that does not keep connections alive opens them.
//
//   request:  24-byte header (magic "FAPQ", body bytes, request id, client
//             rank; big-endian) + body (a pattern derived from the id)
//   answer:   `chunks` frames of a 16-byte header (magic "FAPC", index,
//             total, payload bytes) + payload (a pattern of id and index),
//             the first after the service time, then one per interval; the
//             server closes after the last. "FAPB" instead: busy (over its
//             connection limit), "FAPE": it found the request malformed.
//
// Servers listen on their chosen interface's address only, accept only the
// run's client addresses, bound the request size, open connections and the
// time a connection may take, and close everything at the end of the test.
#include <cstdint>
#include <string>
#include <vector>

#include "kinds/SampleBuffer.hpp"
#include "kinds/SelfTest.hpp"
#include "kinds/api/ApiConfig.hpp"
#include "kinds/api/ApiRecords.hpp"
#include "runtime/ClockSync.hpp"
#include "runtime/Deadline.hpp"
#include "runtime/Mpi.hpp"
#include "runtime/RankIdentity.hpp"

namespace fabscope::suite::api {

// An IPv4 address of this host (network byte order) and the interface it is on.
struct LocalAddress {
  std::string interface;
  std::uint32_t ipv4 = 0;
};

// `wanted` ("" = choose): that interface's address, or an error naming it;
// otherwise the rank's fabric NIC when it is a network interface with an IPv4
// address, else the first interface that is up and not loopback, else loopback.
LocalAddress chooseAddress(const std::string& wanted, const std::string& rankNic);
std::string ipv4Text(std::uint32_t ipv4);

struct Endpoint {
  std::uint32_t ipv4 = 0;  // network byte order
  std::uint16_t port = 0;  // host byte order
};

// What a server saw, for the instance's attributes.
struct ServerCounts {
  std::int64_t answered = 0;          // requests answered in full
  std::int64_t busy = 0;              // refused over max_connections
  std::int64_t badRequests = 0;       // malformed or over-long requests (answered "FAPE")
  std::int64_t outsidersRefused = 0;  // connections from addresses outside the run, closed at once
  std::int64_t stalled = 0;           // connections closed for taking longer than request_timeout
  std::int64_t aborted = 0;           // connections the client closed or reset before the end
};

// Where the --self-test api-corrupt-chunk hook (SelfTest.hpp) spoils one byte:
// the first answer to a request index in [first, last] (warm-up requests counted
// from 0; first -1: nowhere), in that chunk.
struct SpoilAt {
  int first = -1, last = -1;
  int chunk = 0;
};

// A listening server: bound and listening from construction (so clients can
// be told its port before anyone connects); serve() answers until `allDone`
// (a non-blocking barrier the clients join when finished) completes.
class ApiServer {
 public:
  // spoilChunk: the --self-test api-corrupt-chunk hook (SelfTest.hpp).
  ApiServer(const ApiConfig& config, const LocalAddress& address, std::vector<std::uint32_t> allowedClients,
            SpoilAt spoilChunk = {});
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  void allow(std::vector<std::uint32_t> clients) { allowed_ = std::move(clients); }
  ServerCounts serve(MPI_Request& allDone, const runtime::Deadline& deadline);

 private:
  struct Connection;
  void acceptAll(std::int64_t now, ServerCounts& counts);
  std::int64_t sendDueChunks(std::int64_t now, ServerCounts& counts);
  void handleConnectionEvent(Connection& c, std::uint32_t what, ServerCounts& counts);
  void readSome(Connection& c, ServerCounts& counts);
  bool takeRequestBytes(Connection& c, std::size_t got, ServerCounts& counts);
  void reject(Connection& c, ServerCounts& counts);
  void startChunk(Connection& c, ServerCounts& counts);
  void writeSome(Connection& c, ServerCounts& counts);
  void closeConnection(Connection& c);

  const ApiConfig& config_;
  std::vector<std::uint32_t> allowed_;
  SpoilAt spoilChunk_;  // an answer's chunk still to spoil (self-test); first -1 once done
  int listenFd_ = -1;
  int epollFd_ = -1;
  std::uint16_t port_ = 0;
  std::vector<Connection> slots_;
  std::vector<std::uint8_t> scratch_;  // what recv reads into; allocated before serving
};

// What one client measured: a row per measured request (global clock), and
// samples (local clock) into `samples`: the request (connect -> last byte),
// its time to first byte (flag firstByte) and its chunk gaps (flag chunkGap).
struct ClientOutcome {
  std::vector<ApiRequestRecord> rows;
  std::int64_t verified = 0;  // answers whose every byte matched
  // Warm-up requests are not measured, but their bytes are checked: a row per
  // warm-up request whose answer failed the check ("bad-data") or whose body
  // the server refused ("server-error").
  std::vector<ApiRequestRecord> warmupFailures;
};

// spoilRequest: the --self-test api-corrupt-request hook (SelfTest.hpp): the
// index of this client's request to spoil (warm-up counted from 0), or -1.
ClientOutcome runClient(const ApiConfig& config, const LocalAddress& address, int clientIndex, int worldRank,
                        const std::vector<Endpoint>& servers, const std::vector<int>& serverRanks, std::uint64_t seed,
                        SampleBuffer& samples, const runtime::ClockSync& clock, const runtime::Deadline& deadline,
                        int spoilRequest = -1);

// One group's api traffic, collective over `group`: group ranks [0, clients)
// are clients, the others servers (`participants[i]` is group rank i's world
// rank). Servers listen first (a rank that cannot: RuntimeFailure naming every
// such rank and host, on every rank), the endpoints are exchanged, the
// clients run their requests (samples into `samples`) while the servers
// answer, and the counts are summed over the group (on every rank). `selfTest`:
// the api-corrupt-request and api-corrupt-chunk hooks.
struct GroupRun {
  std::vector<ApiRequestRecord> rows;  // this rank's measured requests (clients)
  LocalAddress address;                // where this rank's traffic went
  std::vector<Endpoint> servers;
  std::vector<int> serverRanks;      // world ranks
  std::int64_t measured = 0;         // requests measured by the group
  std::int64_t ok = 0;               // of them, answered with every byte as due
  ServerCounts totals;               // summed over the servers
  std::string errorsByServer;        // "rank 3 (host): timeout 2; ..." ("" when none)
  std::int64_t warmupFailed = 0;     // warm-up requests that failed the data check, over the group
  std::string warmupErrorsByServer;  // as errorsByServer, for them
};

GroupRun runApiGroup(const ApiConfig& config, const runtime::Communicator& group, const std::vector<int>& participants,
                     int worldRank, const runtime::RankIdentity& identity, std::uint64_t seed, SampleBuffer& samples,
                     const runtime::ClockSync& clock, const runtime::Deadline& deadline, const SelfTestHooks& selfTest);

}  // namespace fabscope::suite::api
