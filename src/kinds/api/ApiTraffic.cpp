#include "kinds/api/ApiTraffic.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <random>

#include "runtime/Clock.hpp"
#include "runtime/Errors.hpp"

namespace fabscope::suite::api {
namespace {

using runtime::monotonicNow;

constexpr std::uint32_t kRequestMagic = 0x46415051;  // "FAPQ"
constexpr std::uint32_t kChunkMagic = 0x46415043;    // "FAPC"
constexpr std::uint32_t kBusyMagic = 0x46415042;     // "FAPB"
constexpr std::uint32_t kErrorMagic = 0x46415045;    // "FAPE"
constexpr std::size_t kRequestHeader = 24, kChunkHeader = 16;
constexpr std::size_t kScratch = 64 * 1024;
constexpr std::uint64_t kListenTag = UINT64_MAX, kTimerTag = UINT64_MAX - 1;

std::uint8_t requestByte(std::uint64_t id, std::int64_t i) {
  return static_cast<std::uint8_t>((id * 29 + static_cast<std::uint64_t>(i) * 7 + 3) & 0xff);
}
std::uint8_t chunkByte(std::uint64_t id, std::uint32_t index, std::int64_t i) {
  return static_cast<std::uint8_t>((id * 13 + index * 101u + static_cast<std::uint64_t>(i) * 7) & 0xff);
}

void put32(std::uint8_t* at, std::uint32_t v) {
  v = htonl(v);
  std::memcpy(at, &v, 4);
}
std::uint32_t get32(const std::uint8_t* at) {
  std::uint32_t v;
  std::memcpy(&v, at, 4);
  return ntohl(v);
}
void put64(std::uint8_t* at, std::uint64_t v) {
  put32(at, static_cast<std::uint32_t>(v >> 32));
  put32(at + 4, static_cast<std::uint32_t>(v));
}
std::uint64_t get64(const std::uint8_t* at) { return (std::uint64_t{get32(at)} << 32) | get32(at + 4); }

void chunkHeader(std::uint8_t* at, std::uint32_t magic, std::uint32_t index, std::uint32_t total, std::uint32_t bytes) {
  put32(at, magic);
  put32(at + 4, index);
  put32(at + 8, total);
  put32(at + 12, bytes);
}

[[noreturn]] void systemFailure(const std::string& what) { throw RuntimeFailure(what + ": " + std::strerror(errno)); }

void setNoDelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Arms `timerFd` to fire at `at` (CLOCK_MONOTONIC ns, the clock monotonicNow
// reads); 0 disarms it.
void armTimer(int timerFd, std::int64_t at) {
  itimerspec spec{};
  if (at > 0) {
    spec.it_value.tv_sec = at / 1'000'000'000;
    spec.it_value.tv_nsec = at % 1'000'000'000;
  }
  if (timerfd_settime(timerFd, at > 0 ? TFD_TIMER_ABSTIME : 0, &spec, nullptr) != 0) systemFailure("timerfd_settime");
}

void drainTimer(int timerFd) {
  std::uint64_t expirations;
  while (read(timerFd, &expirations, sizeof expirations) > 0) {
  }
}

// Waits at most 10 ms in the kernel: the loops also poll MPI and their deadline.
constexpr int kPollMs = 10;

}  // namespace

std::string ipv4Text(std::uint32_t ipv4) {
  char text[INET_ADDRSTRLEN] = "?";
  in_addr a{ipv4};
  inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

LocalAddress chooseAddress(const std::string& wanted, const std::string& rankNic) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) systemFailure("getifaddrs");
  struct Found {
    std::string name;
    std::uint32_t ipv4;
    bool up, loopback;
  };
  std::vector<Found> found;
  for (ifaddrs* i = list; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
      found.push_back({i->ifa_name, reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr,
                       (i->ifa_flags & IFF_UP) != 0, (i->ifa_flags & IFF_LOOPBACK) != 0});
  freeifaddrs(list);
  auto named = [&](const std::string& name) -> const Found* {
    for (const auto& f : found)
      if (f.name == name) return &f;
    return nullptr;
  };
  if (!wanted.empty()) {
    const Found* f = named(wanted);
    if (!f) {
      std::string have;
      for (const auto& x : found) have += (have.empty() ? "" : ", ") + x.name;
      throw RuntimeFailure("interface '" + wanted +
                           "' has no IPv4 address here (interfaces with one: " + (have.empty() ? "none" : have) + ")");
    }
    return {f->name, f->ipv4};
  }
  if (const Found* f = named(rankNic.substr(0, rankNic.find(':'))); f && f->up) return {f->name, f->ipv4};
  for (const auto& f : found)
    if (f.up && !f.loopback) return {f.name, f.ipv4};
  for (const auto& f : found)
    if (f.loopback) return {f.name, f.ipv4};
  throw RuntimeFailure("no interface with an IPv4 address is up");
}

// --- server ---------------------------------------------------------------------------

struct ApiServer::Connection {
  enum class Phase { free, header, body, waiting, writing };
  Phase phase = Phase::free;
  int fd = -1;
  std::uint8_t header[kRequestHeader];
  std::size_t headerHave = 0;
  std::uint64_t id = 0;
  std::int64_t bodyLeft = 0, bodyAt = 0;
  bool bad = false;
  std::uint32_t nextChunk = 0;
  std::int64_t firstAt = 0, sendAt = 0, expires = 0;
  bool closeAfterWrite = false;  // an error or busy frame: close once it is out
  std::vector<std::uint8_t> frame;
  std::size_t frameLength = 0, frameSent = 0;
};

ApiServer::ApiServer(const ApiConfig& config, const LocalAddress& address, std::vector<std::uint32_t> allowedClients,
                     SpoilAt spoilChunk)
    : config_(config), allowed_(std::move(allowedClients)), spoilChunk_(spoilChunk) {
  listenFd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) systemFailure("socket");
  int one = 1;
  (void)setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // The chosen interface's address only, never INADDR_ANY.
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = address.ipv4;
  a.sin_port = 0;
  if (bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    systemFailure("bind to " + ipv4Text(address.ipv4) + " (" + address.interface + ")");
  if (listen(listenFd_, std::min(config.maxConnections, SOMAXCONN)) != 0) systemFailure("listen");
  socklen_t length = sizeof a;
  if (getsockname(listenFd_, reinterpret_cast<sockaddr*>(&a), &length) != 0) systemFailure("getsockname");
  port_ = ntohs(a.sin_port);
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) systemFailure("epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, listenFd_, &ev) != 0) systemFailure("epoll_ctl(listen)");
  // Every connection's buffer before anything is measured: as many as can be
  // open at once (the limit, or every client's requests in flight if fewer).
  slots_.resize(static_cast<std::size_t>(
      std::min<std::int64_t>(config.maxConnections, std::int64_t{config.clients} * config.maxInFlight)));
  for (auto& s : slots_) s.frame.resize(kChunkHeader + static_cast<std::size_t>(config.chunkBytes));
}

ApiServer::~ApiServer() {
  for (auto& s : slots_)
    if (s.fd >= 0) close(s.fd);
  if (epollFd_ >= 0) close(epollFd_);
  if (listenFd_ >= 0) close(listenFd_);
}

void ApiServer::closeConnection(Connection& c) {
  if (c.fd >= 0) close(c.fd);  // also leaves the epoll set
  c.fd = -1;
  c.phase = Connection::Phase::free;
}

void ApiServer::acceptAll(std::int64_t now, ServerCounts& counts) {
  for (;;) {
    sockaddr_in peer{};
    socklen_t length = sizeof peer;
    const int fd = accept4(listenFd_, reinterpret_cast<sockaddr*>(&peer), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED || errno == EINTR) return;
      systemFailure("accept");
    }
    if (std::find(allowed_.begin(), allowed_.end(), peer.sin_addr.s_addr) == allowed_.end()) {
      ++counts.outsidersRefused;  // not one of the run's clients: no byte is read from it
      close(fd);
      continue;
    }
    auto slot = std::find_if(slots_.begin(), slots_.end(), [](const Connection& c) { return c.fd < 0; });
    if (slot == slots_.end()) {
      std::uint8_t busy[kChunkHeader];
      chunkHeader(busy, kBusyMagic, 0, 0, 0);
      (void)!write(fd, busy, sizeof busy);
      ++counts.busy;
      close(fd);
      continue;
    }
    setNoDelay(fd);
    auto& c = *slot;
    auto frame = std::move(c.frame);  // the slot's buffer, allocated before the test
    c = Connection{};
    c.frame = std::move(frame);
    c.phase = Connection::Phase::header;
    c.fd = fd;
    c.expires = now + static_cast<std::int64_t>(config_.requestTimeoutSeconds * 1e9);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<std::uint64_t>(slot - slots_.begin());
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev) != 0) systemFailure("epoll_ctl(connection)");
  }
}

// Sends what is left of c's frame; then the next chunk is due, or the answer is done.
void ApiServer::writeSome(Connection& c, ServerCounts& counts) {
  while (c.frameSent < c.frameLength) {
    const ssize_t n = send(c.fd, c.frame.data() + c.frameSent, c.frameLength - c.frameSent, MSG_NOSIGNAL);
    if (n > 0) {
      c.frameSent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
      ev.data.u64 = static_cast<std::uint64_t>(&c - slots_.data());
      epoll_ctl(epollFd_, EPOLL_CTL_MOD, c.fd, &ev);
      c.phase = Connection::Phase::writing;
      return;
    }
    ++counts.aborted;  // the client went away mid-answer
    closeConnection(c);
    return;
  }
  if (c.closeAfterWrite) {
    closeConnection(c);
    return;
  }
  if (++c.nextChunk == static_cast<std::uint32_t>(config_.chunks)) {
    ++counts.answered;
    closeConnection(c);
    return;
  }
  if (c.phase == Connection::Phase::writing) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<std::uint64_t>(&c - slots_.data());
    epoll_ctl(epollFd_, EPOLL_CTL_MOD, c.fd, &ev);
  }
  c.phase = Connection::Phase::waiting;
  // Planned, so a late chunk does not shift the rest.
  c.sendAt = c.firstAt + static_cast<std::int64_t>(config_.chunkIntervalSeconds * 1e9) * c.nextChunk;
}

void ApiServer::startChunk(Connection& c, ServerCounts& counts) {
  const auto bytes = static_cast<std::uint32_t>(config_.chunkBytes);
  chunkHeader(c.frame.data(), kChunkMagic, c.nextChunk, static_cast<std::uint32_t>(config_.chunks), bytes);
  for (std::uint32_t i = 0; i < bytes; ++i) c.frame[kChunkHeader + i] = chunkByte(c.id, c.nextChunk, i);
  // Self-test: one payload byte of the chosen chunk of the first answer to a
  // chosen request index (ids are client rank * requests per client + index).
  const auto index = static_cast<std::int64_t>(c.id % static_cast<std::uint64_t>(config_.totalRequestsPerClient()));
  if (spoilChunk_.first >= 0 && index >= spoilChunk_.first && index <= spoilChunk_.last &&
      c.nextChunk == static_cast<std::uint32_t>(spoilChunk_.chunk) && bytes > 0) {
    c.frame[kChunkHeader + bytes / 2] ^= 0x5a;
    spoilChunk_.first = -1;
  }
  c.frameLength = kChunkHeader + bytes;
  c.frameSent = 0;
  writeSome(c, counts);
}

void ApiServer::reject(Connection& c, ServerCounts& counts) {
  ++counts.badRequests;
  chunkHeader(c.frame.data(), kErrorMagic, 0, 0, 0);
  c.frameLength = kChunkHeader;
  c.frameSent = 0;
  c.closeAfterWrite = true;
  writeSome(c, counts);
}

void ApiServer::readSome(Connection& c, ServerCounts& counts) {
  for (;;) {
    const ssize_t n = recv(c.fd, scratch_.data(), scratch_.size(), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      ++counts.aborted;
      closeConnection(c);
      return;
    }
    if (n < 0) return;
    if (!takeRequestBytes(c, static_cast<std::size_t>(n), counts)) return;
  }
}

// The first `got` bytes of scratch_: the request's header, then its body,
// checked byte by byte. False when the connection reads no more (the request
// is whole, or rejected).
bool ApiServer::takeRequestBytes(Connection& c, std::size_t got, ServerCounts& counts) {
  std::size_t at = 0;
  if (c.phase != Connection::Phase::header && c.phase != Connection::Phase::body) {
    reject(c, counts);  // bytes after a whole request
    return false;
  }
  if (c.phase == Connection::Phase::header) {
    const std::size_t take = std::min(got, kRequestHeader - c.headerHave);
    std::memcpy(c.header + c.headerHave, scratch_.data(), take);
    c.headerHave += take;
    at = take;
    if (c.headerHave < kRequestHeader) return true;
    const auto bodyBytes = get32(c.header + 4);
    c.id = get64(c.header + 8);
    // Bounded: exactly the scenario's request size, nothing larger is read.
    if (get32(c.header) != kRequestMagic || bodyBytes != static_cast<std::uint64_t>(config_.requestBytes)) {
      reject(c, counts);
      return false;
    }
    c.bodyLeft = bodyBytes;
    c.bodyAt = 0;
    c.phase = Connection::Phase::body;
  }
  const auto body = static_cast<std::int64_t>(got - at);
  if (body > c.bodyLeft) {
    reject(c, counts);
    return false;
  }
  for (std::int64_t i = 0; i < body; ++i)
    if (scratch_[at + static_cast<std::size_t>(i)] != requestByte(c.id, c.bodyAt + i)) c.bad = true;
  c.bodyAt += body;
  c.bodyLeft -= body;
  if (c.bodyLeft > 0) return true;
  if (c.bad) {
    reject(c, counts);
    return false;
  }
  c.phase = Connection::Phase::waiting;
  c.nextChunk = 0;
  c.firstAt = c.sendAt = monotonicNow() + static_cast<std::int64_t>(config_.serviceSeconds * 1e9);
  return false;
}

// Closes the connections past request_timeout, sends the chunks that are due;
// returns when the next chunk is due (0: none waiting).
std::int64_t ApiServer::sendDueChunks(std::int64_t now, ServerCounts& counts) {
  std::int64_t next = 0;
  for (auto& c : slots_) {
    if (c.fd < 0) continue;
    if (c.expires <= now) {
      ++counts.stalled;
      closeConnection(c);
      continue;
    }
    if (c.phase == Connection::Phase::waiting && c.sendAt <= now) startChunk(c, counts);
    if (c.fd >= 0 && c.phase == Connection::Phase::waiting && (next == 0 || c.sendAt < next)) next = c.sendAt;
  }
  return next;
}

void ApiServer::handleConnectionEvent(Connection& c, std::uint32_t what, ServerCounts& counts) {
  if (c.fd < 0) return;
  if (what & EPOLLIN) readSome(c, counts);
  if (c.fd >= 0 && (what & EPOLLOUT) && c.phase == Connection::Phase::writing) writeSome(c, counts);
  if (c.fd >= 0 && (what & (EPOLLERR | EPOLLHUP))) {
    ++counts.aborted;
    closeConnection(c);
  }
}

ServerCounts ApiServer::serve(MPI_Request& allDone, const runtime::Deadline& deadline) {
  ServerCounts counts;
  const int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer < 0) systemFailure("timerfd_create");
  struct TimerCloser {
    int fd;
    ~TimerCloser() { close(fd); }
  } closer{timer};
  epoll_event tev{};
  tev.events = EPOLLIN;
  tev.data.u64 = kTimerTag;
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, timer, &tev) != 0) systemFailure("epoll_ctl(timer)");
  scratch_.assign(kScratch, 0);
  std::vector<epoll_event> events(64);
  const runtime::watchdog::Watch watch("the api clients to finish their requests", deadline.at(),
                                       runtime::watchdog::everyRank);
  for (;;) {
    int finished = 0;
    runtime::checkMpi(MPI_Test(&allDone, &finished, MPI_STATUS_IGNORE), "MPI_Test(api clients finished)");
    if (finished) break;
    if (deadline.expired()) deadline.fail("the api clients to finish their requests");
    armTimer(timer, sendDueChunks(monotonicNow(), counts));
    const int ready = epoll_wait(epollFd_, events.data(), static_cast<int>(events.size()), kPollMs);
    if (ready < 0 && errno != EINTR) systemFailure("epoll_wait");
    const std::int64_t now = monotonicNow();
    for (int i = 0; i < ready; ++i) {
      const auto& event = events[static_cast<std::size_t>(i)];
      if (event.data.u64 == kListenTag)
        acceptAll(now, counts);
      else if (event.data.u64 == kTimerTag)
        drainTimer(timer);
      else
        handleConnectionEvent(slots_[event.data.u64], event.events, counts);
    }
  }
  for (auto& c : slots_)
    if (c.fd >= 0) {
      ++counts.aborted;
      closeConnection(c);
    }
  return counts;
}

// --- client ---------------------------------------------------------------------------

namespace {

struct ClientSlot {
  enum class Phase { free, connecting, sending, receiving };
  Phase phase = Phase::free;
  int fd = -1;
  int request = -1, server = 0;
  std::vector<std::uint8_t> out;
  std::size_t outSent = 0;
  std::uint8_t header[kChunkHeader];
  std::size_t headerHave = 0;
  std::int64_t payloadLeft = 0, payloadAt = 0;
  std::uint32_t chunk = 0;
  bool dataOk = true;
  std::int64_t tArrival = 0, tStart = 0, tConnected = -1, tFirst = -1, tLastChunk = 0, gapMax = 0, bytes = 0,
               expires = 0;
};

void setText(char* to, std::size_t size, const std::string& text) {
  std::memset(to, 0, size);
  std::memcpy(to, text.data(), std::min(size - 1, text.size()));
}

// One client's open-loop request stream: a slot per request in flight, each
// its own connection, driven by one epoll loop.
class ApiClient {
 public:
  ApiClient(const ApiConfig& config, const LocalAddress& address, int clientIndex, int worldRank,
            const std::vector<Endpoint>& servers, const std::vector<int>& serverRanks, std::uint64_t seed,
            SampleBuffer& samples, const runtime::ClockSync& clock, int spoilRequest);
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;
  ~ApiClient();
  ClientOutcome run(const runtime::Deadline& deadline);

 private:
  void drawArrivals(std::uint64_t seed);
  void startDue(std::int64_t now);
  void handleEvent(ClientSlot& s, std::uint32_t what);
  void start(ClientSlot& s, int request);
  void connected(ClientSlot& s, std::int64_t now);
  void sendSome(ClientSlot& s, std::int64_t now);
  void receive(ClientSlot& s);
  bool takeChunkHeader(ClientSlot& s, std::size_t got, std::size_t& at, std::int64_t now);
  void takePayload(ClientSlot& s, std::size_t got, std::size_t& at, std::int64_t now);
  void finish(ClientSlot& s, const char* status, std::int64_t now);
  void watch(ClientSlot& s, std::uint32_t events);
  std::uint64_t requestId(int request) const {
    return static_cast<std::uint64_t>(worldRank_) * static_cast<std::uint64_t>(total_) +
           static_cast<std::uint64_t>(request);
  }

  const ApiConfig& config_;
  const LocalAddress& address_;
  const int clientIndex_, worldRank_;
  const std::vector<Endpoint>& servers_;
  const std::vector<int>& serverRanks_;
  SampleBuffer& samples_;
  const runtime::ClockSync& clock_;
  const int total_;
  const std::int64_t timeout_;
  const int spoilRequest_;  // self-test: the index of the request whose body is spoiled, or -1
  ClientOutcome outcome_;
  std::vector<std::int64_t> arrival_;
  std::vector<ClientSlot> slots_;
  std::vector<std::uint8_t> scratch_;
  int epollFd_ = -1, timer_ = -1;
  int next_ = 0, done_ = 0;
};

ApiClient::ApiClient(const ApiConfig& config, const LocalAddress& address, int clientIndex, int worldRank,
                     const std::vector<Endpoint>& servers, const std::vector<int>& serverRanks, std::uint64_t seed,
                     SampleBuffer& samples, const runtime::ClockSync& clock, int spoilRequest)
    : config_(config),
      address_(address),
      clientIndex_(clientIndex),
      worldRank_(worldRank),
      servers_(servers),
      serverRanks_(serverRanks),
      samples_(samples),
      clock_(clock),
      total_(config.totalRequestsPerClient()),
      timeout_(static_cast<std::int64_t>(config.requestTimeoutSeconds * 1e9)),
      spoilRequest_(spoilRequest) {
  outcome_.rows.reserve(static_cast<std::size_t>(config.requests));
  outcome_.warmupFailures.reserve(static_cast<std::size_t>(config.warmupRequests));
  drawArrivals(seed);
  slots_.resize(static_cast<std::size_t>(config.maxInFlight));
  for (auto& s : slots_) s.out.resize(kRequestHeader + static_cast<std::size_t>(config.requestBytes));
  scratch_.resize(kScratch);
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) systemFailure("epoll_create1");
  timer_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_ < 0) systemFailure("timerfd_create");
  epoll_event tev{};
  tev.events = EPOLLIN;
  tev.data.u64 = kTimerTag;
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, timer_, &tev) != 0) systemFailure("epoll_ctl(timer)");
}

ApiClient::~ApiClient() {
  for (auto& s : slots_)
    if (s.fd >= 0) close(s.fd);
  if (epollFd_ >= 0) close(epollFd_);
  if (timer_ >= 0) close(timer_);
}

// Open-loop arrivals, drawn before the clock starts (exponential gaps).
void ApiClient::drawArrivals(std::uint64_t seed) {
  arrival_.resize(static_cast<std::size_t>(total_));
  std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(clientIndex_ + 1)));
  double t = 0;
  for (auto& a : arrival_) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    t += -std::log1p(-u) / config_.ratePerSecond;
    a = static_cast<std::int64_t>(t * 1e9);
  }
}

void ApiClient::finish(ClientSlot& s, const char* status, std::int64_t now) {
  if (s.fd >= 0) close(s.fd);
  s.fd = -1;
  const bool ok = std::strcmp(status, "ok") == 0;
  const int measured = s.request - config_.warmupRequests;
  const bool dataFailed = std::strcmp(status, "bad-data") == 0 || std::strcmp(status, "server-error") == 0;
  if (measured >= 0 || dataFailed) {
    const auto serverRank = serverRanks_[static_cast<std::size_t>(s.server)];
    if (ok && measured >= 0) {
      ++outcome_.verified;
      samples_.record(worldRank_, measured, serverRank, s.bytes, s.tStart, s.tLastChunk);
      samples_.record(worldRank_, measured, serverRank, 0, s.tStart, s.tFirst, sample_flags::firstByte);
    }
    ApiRequestRecord row{};
    row.request_id = static_cast<std::int64_t>(requestId(s.request));
    row.client_rank = worldRank_;
    row.server_rank = serverRank;
    row.t_arrival_ns = clock_.toGlobal(s.tArrival);
    row.t_start_ns = clock_.toGlobal(s.tStart);
    row.connect_ns = s.tConnected >= 0 ? s.tConnected - s.tStart : -1;
    row.ttfb_ns = s.tFirst >= 0 ? s.tFirst - s.tStart : -1;
    row.t_done_ns = clock_.toGlobal(ok ? s.tLastChunk : now);
    row.gap_max_ns = s.gapMax;
    row.chunks = static_cast<std::int32_t>(s.chunk);
    row.bytes = s.bytes;
    setText(row.status, sizeof row.status, status);
    setText(row.network, sizeof row.network, config_.network);
    setText(row.interface, sizeof row.interface, address_.interface);
    // Both reserved above: no allocation here.
    (measured >= 0 ? outcome_.rows : outcome_.warmupFailures).push_back(row);
  }
  s.phase = ClientSlot::Phase::free;
  ++done_;
}

void ApiClient::watch(ClientSlot& s, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = static_cast<std::uint64_t>(&s - slots_.data());
  epoll_ctl(epollFd_, EPOLL_CTL_MOD, s.fd, &ev);
}

void ApiClient::sendSome(ClientSlot& s, std::int64_t now) {
  while (s.outSent < s.out.size()) {
    const ssize_t n = send(s.fd, s.out.data() + s.outSent, s.out.size() - s.outSent, MSG_NOSIGNAL);
    if (n > 0) {
      s.outSent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    finish(s, "reset", now);
    return;
  }
  s.phase = ClientSlot::Phase::receiving;
  watch(s, EPOLLIN | EPOLLRDHUP);
}

void ApiClient::connected(ClientSlot& s, std::int64_t now) {
  s.tConnected = now;
  s.phase = ClientSlot::Phase::sending;
  sendSome(s, now);
}

// The request's frame in the slot's buffer, and a connection from the chosen
// address to its server (round-robin by request).
void ApiClient::start(ClientSlot& s, int request) {
  auto out = std::move(s.out);  // the slot's buffer, allocated before the test
  s = ClientSlot{};
  s.out = std::move(out);
  s.phase = ClientSlot::Phase::connecting;
  s.request = request;
  s.server = (clientIndex_ + request) % static_cast<int>(servers_.size());
  const auto id = requestId(request);
  put32(s.out.data(), kRequestMagic);
  put32(s.out.data() + 4, static_cast<std::uint32_t>(config_.requestBytes));
  put64(s.out.data() + 8, id);
  put32(s.out.data() + 16, static_cast<std::uint32_t>(worldRank_));
  put32(s.out.data() + 20, 0);
  for (std::int64_t i = 0; i < config_.requestBytes; ++i)
    s.out[kRequestHeader + static_cast<std::size_t>(i)] = requestByte(id, i);
  if (request == spoilRequest_) s.out[kRequestHeader + static_cast<std::size_t>(config_.requestBytes / 2)] ^= 0x5a;
  s.tArrival = arrival_[static_cast<std::size_t>(request)];
  s.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s.fd < 0) systemFailure("socket");
  setNoDelay(s.fd);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = address_.ipv4;  // from the chosen interface: the server checks it
  if (bind(s.fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0)
    systemFailure("bind to " + ipv4Text(address_.ipv4) + " (" + address_.interface + ")");
  const auto& e = servers_[static_cast<std::size_t>(s.server)];
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = e.ipv4;
  to.sin_port = htons(e.port);
  epoll_event ev{};
  ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = static_cast<std::uint64_t>(&s - slots_.data());
  if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, s.fd, &ev) != 0) systemFailure("epoll_ctl(request)");
  s.tStart = monotonicNow();
  s.expires = s.tStart + timeout_;
  if (connect(s.fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0)
    connected(s, monotonicNow());
  else if (errno != EINPROGRESS)
    finish(s, errno == ECONNREFUSED ? "refused" : "reset", monotonicNow());
}

// The next chunk's header from scratch_[at, got); false when the answer ended
// (busy, server error, or a header not the one due).
bool ApiClient::takeChunkHeader(ClientSlot& s, std::size_t got, std::size_t& at, std::int64_t now) {
  const std::size_t take = std::min(got - at, kChunkHeader - s.headerHave);
  std::memcpy(s.header + s.headerHave, scratch_.data() + at, take);
  s.headerHave += take;
  at += take;
  if (s.headerHave < kChunkHeader) return true;
  const auto magic = get32(s.header);
  if (magic == kBusyMagic || magic == kErrorMagic) {
    finish(s, magic == kBusyMagic ? "busy" : "server-error", now);
    return false;
  }
  if (magic != kChunkMagic || get32(s.header + 4) != s.chunk ||
      get32(s.header + 8) != static_cast<std::uint32_t>(config_.chunks) ||
      get32(s.header + 12) != static_cast<std::uint32_t>(config_.chunkBytes)) {
    finish(s, "bad-data", now);
    return false;
  }
  s.payloadLeft = config_.chunkBytes;
  s.payloadAt = 0;
  return true;
}

// The chunk's payload from scratch_[at, got), checked byte by byte; a chunk
// after the first adds its gap as a sample.
void ApiClient::takePayload(ClientSlot& s, std::size_t got, std::size_t& at, std::int64_t now) {
  const auto take = static_cast<std::int64_t>(std::min<std::size_t>(got - at, static_cast<std::size_t>(s.payloadLeft)));
  const std::uint64_t id = get64(s.out.data() + 8);
  for (std::int64_t i = 0; i < take; ++i)
    if (scratch_[at + static_cast<std::size_t>(i)] != chunkByte(id, s.chunk, s.payloadAt + i)) s.dataOk = false;
  at += static_cast<std::size_t>(take);
  s.payloadAt += take;
  s.payloadLeft -= take;
  s.bytes += take;
  if (s.payloadLeft != 0) return;
  if (s.chunk > 0) {
    s.gapMax = std::max(s.gapMax, now - s.tLastChunk);
    if (s.request >= config_.warmupRequests)
      samples_.record(worldRank_, s.request - config_.warmupRequests, serverRanks_[static_cast<std::size_t>(s.server)],
                      config_.chunkBytes, s.tLastChunk, now, sample_flags::chunkGap);
  }
  s.tLastChunk = now;
  ++s.chunk;
  s.headerHave = 0;
}

void ApiClient::receive(ClientSlot& s) {
  for (;;) {
    const ssize_t n = recv(s.fd, scratch_.data(), scratch_.size(), 0);
    const std::int64_t now = monotonicNow();
    if (n == 0) {
      finish(s, s.chunk == static_cast<std::uint32_t>(config_.chunks) ? (s.dataOk ? "ok" : "bad-data") : "reset", now);
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      finish(s, errno == ECONNREFUSED ? "refused" : "reset", now);
      return;
    }
    if (s.tFirst < 0) s.tFirst = now;
    std::size_t at = 0;
    const auto got = static_cast<std::size_t>(n);
    while (at < got) {
      if (s.headerHave < kChunkHeader) {
        if (!takeChunkHeader(s, got, at, now)) return;
        if (s.headerHave < kChunkHeader) break;
      }
      takePayload(s, got, at, now);
    }
  }
}

// Times out the requests past request_timeout, then starts every request
// whose arrival has come while a slot is free.
void ApiClient::startDue(std::int64_t now) {
  for (auto& s : slots_)
    if (s.phase != ClientSlot::Phase::free && s.expires <= now) finish(s, "timeout", now);
  for (auto& s : slots_)
    if (s.phase == ClientSlot::Phase::free && next_ < total_ && arrival_[static_cast<std::size_t>(next_)] <= now)
      start(s, next_++);
}

void ApiClient::handleEvent(ClientSlot& s, std::uint32_t what) {
  if (s.phase == ClientSlot::Phase::free) return;
  const auto now = monotonicNow();
  if (s.phase == ClientSlot::Phase::connecting && (what & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
    int error = 0;
    socklen_t length = sizeof error;
    getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      finish(s, error == ECONNREFUSED ? "refused" : "reset", now);
      return;
    }
    connected(s, now);
    if (s.phase == ClientSlot::Phase::free) return;
  } else if (s.phase == ClientSlot::Phase::sending && (what & EPOLLOUT)) {
    sendSome(s, now);
    if (s.phase == ClientSlot::Phase::free) return;
  }
  if (s.phase == ClientSlot::Phase::receiving && (what & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) receive(s);
}

ClientOutcome ApiClient::run(const runtime::Deadline& deadline) {
  std::vector<epoll_event> events(64);
  const std::int64_t t0 = monotonicNow();
  for (auto& a : arrival_) a += t0;
  const runtime::watchdog::Watch watchAnswers("api requests to be answered", deadline.at());
  while (done_ < total_) {
    if (deadline.expired()) deadline.fail("api requests to be answered");
    startDue(monotonicNow());
    std::int64_t wake = 0;
    const bool slotFree = std::any_of(slots_.begin(), slots_.end(),
                                      [](const ClientSlot& s) { return s.phase == ClientSlot::Phase::free; });
    if (next_ < total_ && slotFree) wake = arrival_[static_cast<std::size_t>(next_)];
    armTimer(timer_, wake);
    const int ready = epoll_wait(epollFd_, events.data(), static_cast<int>(events.size()), kPollMs);
    if (ready < 0 && errno != EINTR) systemFailure("epoll_wait");
    for (int i = 0; i < ready; ++i) {
      const auto& event = events[static_cast<std::size_t>(i)];
      if (event.data.u64 == kTimerTag)
        drainTimer(timer_);
      else
        handleEvent(slots_[event.data.u64], event.events);
    }
  }
  return std::move(outcome_);
}

}  // namespace

ClientOutcome runClient(const ApiConfig& config, const LocalAddress& address, int clientIndex, int worldRank,
                        const std::vector<Endpoint>& servers, const std::vector<int>& serverRanks, std::uint64_t seed,
                        SampleBuffer& samples, const runtime::ClockSync& clock, const runtime::Deadline& deadline,
                        int spoilRequest) {
  return ApiClient(config, address, clientIndex, worldRank, servers, serverRanks, seed, samples, clock, spoilRequest)
      .run(deadline);
}

}  // namespace fabscope::suite::api
