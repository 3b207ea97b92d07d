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

[[noreturn]] void systemFailure(const std::string& what) {
  throw RuntimeFailure(what + ": " + std::strerror(errno));
}

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
      throw RuntimeFailure("interface '" + wanted + "' has no IPv4 address here (interfaces with one: " +
                           (have.empty() ? "none" : have) + ")");
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

ApiServer::ApiServer(const ApiConfig& config, const LocalAddress& address, std::vector<std::uint32_t> allowedClients)
    : config_(config), allowed_(std::move(allowedClients)) {
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
  std::vector<std::uint8_t> scratch(kScratch);
  std::vector<epoll_event> events(64);
  const auto interval = static_cast<std::int64_t>(config_.chunkIntervalSeconds * 1e9);
  const auto service = static_cast<std::int64_t>(config_.serviceSeconds * 1e9);
  const auto total = static_cast<std::uint32_t>(config_.chunks);

  // Sends what is left of c's frame; then the next chunk is due, or the answer is done.
  auto writeSome = [&](Connection& c, std::int64_t now) {
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
    if (++c.nextChunk == total) {
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
    c.sendAt = c.firstAt + interval * c.nextChunk;  // planned, so a late chunk does not shift the rest
    (void)now;
  };
  auto startChunk = [&](Connection& c, std::int64_t now) {
    const auto bytes = static_cast<std::uint32_t>(config_.chunkBytes);
    chunkHeader(c.frame.data(), kChunkMagic, c.nextChunk, total, bytes);
    for (std::uint32_t i = 0; i < bytes; ++i) c.frame[kChunkHeader + i] = chunkByte(c.id, c.nextChunk, i);
    c.frameLength = kChunkHeader + bytes;
    c.frameSent = 0;
    writeSome(c, now);
  };
  auto reject = [&](Connection& c, std::int64_t now) {
    ++counts.badRequests;
    chunkHeader(c.frame.data(), kErrorMagic, 0, 0, 0);
    c.frameLength = kChunkHeader;
    c.frameSent = 0;
    c.closeAfterWrite = true;
    writeSome(c, now);
  };
  auto readSome = [&](Connection& c, std::int64_t now) {
    for (;;) {
      const ssize_t n = recv(c.fd, scratch.data(), scratch.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        ++counts.aborted;
        closeConnection(c);
        return;
      }
      if (n < 0) return;
      std::size_t at = 0;
      const auto got = static_cast<std::size_t>(n);
      if (c.phase != Connection::Phase::header && c.phase != Connection::Phase::body) {
        reject(c, now);  // bytes after a whole request
        return;
      }
      if (c.phase == Connection::Phase::header) {
        const std::size_t take = std::min(got, kRequestHeader - c.headerHave);
        std::memcpy(c.header + c.headerHave, scratch.data(), take);
        c.headerHave += take;
        at = take;
        if (c.headerHave < kRequestHeader) continue;
        const auto bodyBytes = get32(c.header + 4);
        c.id = get64(c.header + 8);
        // Bounded: exactly the scenario's request size, nothing larger is read.
        if (get32(c.header) != kRequestMagic || bodyBytes != static_cast<std::uint64_t>(config_.requestBytes)) {
          reject(c, now);
          return;
        }
        c.bodyLeft = bodyBytes;
        c.bodyAt = 0;
        c.phase = Connection::Phase::body;
      }
      const auto body = static_cast<std::int64_t>(got - at);
      if (body > c.bodyLeft) {
        reject(c, now);
        return;
      }
      for (std::int64_t i = 0; i < body; ++i)
        if (scratch[at + static_cast<std::size_t>(i)] != requestByte(c.id, c.bodyAt + i)) c.bad = true;
      c.bodyAt += body;
      c.bodyLeft -= body;
      if (c.bodyLeft == 0) {
        if (c.bad) {
          reject(c, now);
          return;
        }
        c.phase = Connection::Phase::waiting;
        c.nextChunk = 0;
        c.firstAt = c.sendAt = monotonicNow() + service;
        return;
      }
    }
  };

  const runtime::watchdog::Watch watch("the api clients to finish their requests", deadline.at(),
                                       runtime::watchdog::everyRank);
  for (;;) {
    int finished = 0;
    runtime::checkMpi(MPI_Test(&allDone, &finished, MPI_STATUS_IGNORE), "MPI_Test(api clients finished)");
    if (finished) break;
    if (deadline.expired()) deadline.fail("the api clients to finish their requests");
    std::int64_t now = monotonicNow();
    std::int64_t next = 0;
    for (auto& c : slots_) {
      if (c.fd < 0) continue;
      if (c.expires <= now) {
        ++counts.stalled;
        closeConnection(c);
        continue;
      }
      if (c.phase == Connection::Phase::waiting && c.sendAt <= now) startChunk(c, now);
      if (c.fd >= 0 && c.phase == Connection::Phase::waiting && (next == 0 || c.sendAt < next)) next = c.sendAt;
    }
    armTimer(timer, next);
    const int ready = epoll_wait(epollFd_, events.data(), static_cast<int>(events.size()), kPollMs);
    if (ready < 0 && errno != EINTR) systemFailure("epoll_wait");
    now = monotonicNow();
    for (int i = 0; i < ready; ++i) {
      const auto tag = events[static_cast<std::size_t>(i)].data.u64;
      if (tag == kListenTag) {
        acceptAll(now, counts);
      } else if (tag == kTimerTag) {
        drainTimer(timer);
      } else {
        auto& c = slots_[tag];
        if (c.fd < 0) continue;
        const auto what = events[static_cast<std::size_t>(i)].events;
        if (what & EPOLLIN) readSome(c, now);
        if (c.fd >= 0 && (what & EPOLLOUT) && c.phase == Connection::Phase::writing) writeSome(c, now);
        if (c.fd >= 0 && (what & (EPOLLERR | EPOLLHUP))) {
          ++counts.aborted;
          closeConnection(c);
        }
      }
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
  std::int64_t tArrival = 0, tStart = 0, tConnected = -1, tFirst = -1, tLastChunk = 0, gapMax = 0, bytes = 0, expires = 0;
};

void setText(char* to, std::size_t size, const std::string& text) {
  std::memset(to, 0, size);
  std::memcpy(to, text.data(), std::min(size - 1, text.size()));
}

}  // namespace

ClientOutcome runClient(const ApiConfig& config, const LocalAddress& address, int clientIndex, int worldRank,
                        const std::vector<Endpoint>& servers, const std::vector<int>& serverRanks,
                        std::uint64_t seed, SampleBuffer& samples, const runtime::ClockSync& clock,
                        const runtime::Deadline& deadline) {
  const int total = config.totalRequestsPerClient();
  const auto nServers = static_cast<int>(servers.size());
  ClientOutcome outcome;
  outcome.rows.reserve(static_cast<std::size_t>(config.requests));
  // Open-loop arrivals, drawn before the clock starts (exponential gaps).
  std::vector<std::int64_t> arrival(static_cast<std::size_t>(total));
  std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(clientIndex + 1)));
  double t = 0;
  for (auto& a : arrival) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    t += -std::log1p(-u) / config.ratePerSecond;
    a = static_cast<std::int64_t>(t * 1e9);
  }
  std::vector<ClientSlot> slots(static_cast<std::size_t>(config.maxInFlight));
  for (auto& s : slots) s.out.resize(kRequestHeader + static_cast<std::size_t>(config.requestBytes));
  std::vector<std::uint8_t> scratch(kScratch);
  std::vector<epoll_event> events(64);
  const int epollFd = epoll_create1(EPOLL_CLOEXEC);
  if (epollFd < 0) systemFailure("epoll_create1");
  const int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer < 0) systemFailure("timerfd_create");
  struct Closer {
    int a, b;
    std::vector<ClientSlot>& slots;
    ~Closer() {
      for (auto& s : slots)
        if (s.fd >= 0) close(s.fd);
      close(a);
      close(b);
    }
  } closer{epollFd, timer, slots};
  epoll_event tev{};
  tev.events = EPOLLIN;
  tev.data.u64 = kTimerTag;
  if (epoll_ctl(epollFd, EPOLL_CTL_ADD, timer, &tev) != 0) systemFailure("epoll_ctl(timer)");
  const auto timeout = static_cast<std::int64_t>(config.requestTimeoutSeconds * 1e9);
  const auto requestsPerClient = static_cast<std::uint64_t>(total);

  int next = 0, done = 0;
  const std::int64_t t0 = monotonicNow();
  for (auto& a : arrival) a += t0;

  auto finish = [&](ClientSlot& s, const char* status, std::int64_t now) {
    if (s.fd >= 0) close(s.fd);
    s.fd = -1;
    const bool ok = std::strcmp(status, "ok") == 0;
    const int measured = s.request - config.warmupRequests;
    if (measured >= 0) {
      const auto serverRank = serverRanks[static_cast<std::size_t>(s.server)];
      if (ok) {
        ++outcome.verified;
        samples.record(worldRank, measured, serverRank, s.bytes, s.tStart, s.tLastChunk);
        samples.record(worldRank, measured, serverRank, 0, s.tStart, s.tFirst, output::sample_flags::firstByte);
      }
      output::ApiRequestRecord row{};
      row.request_id = static_cast<std::int64_t>(static_cast<std::uint64_t>(worldRank) * requestsPerClient +
                                                 static_cast<std::uint64_t>(s.request));
      row.client_rank = worldRank;
      row.server_rank = serverRank;
      row.t_arrival_ns = clock.toGlobal(s.tArrival);
      row.t_start_ns = clock.toGlobal(s.tStart);
      row.connect_ns = s.tConnected >= 0 ? s.tConnected - s.tStart : -1;
      row.ttfb_ns = s.tFirst >= 0 ? s.tFirst - s.tStart : -1;
      row.t_done_ns = clock.toGlobal(ok ? s.tLastChunk : now);
      row.gap_max_ns = s.gapMax;
      row.chunks = static_cast<std::int32_t>(s.chunk);
      row.bytes = s.bytes;
      setText(row.status, sizeof row.status, status);
      setText(row.network, sizeof row.network, config.network);
      setText(row.interface, sizeof row.interface, address.interface);
      outcome.rows.push_back(row);  // reserved above: no allocation here
    }
    s.phase = ClientSlot::Phase::free;
    ++done;
  };
  auto watch = [&](ClientSlot& s, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = static_cast<std::uint64_t>(&s - slots.data());
    epoll_ctl(epollFd, EPOLL_CTL_MOD, s.fd, &ev);
  };
  auto sendSome = [&](ClientSlot& s, std::int64_t now) {
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
  };
  auto start = [&](ClientSlot& s, int request, std::int64_t now) {
    auto out = std::move(s.out);  // the slot's buffer, allocated before the test
    s = ClientSlot{};
    s.out = std::move(out);
    s.phase = ClientSlot::Phase::connecting;
    s.request = request;
    s.server = (clientIndex + request) % nServers;
    const auto id = static_cast<std::uint64_t>(worldRank) * requestsPerClient + static_cast<std::uint64_t>(request);
    put32(s.out.data(), kRequestMagic);
    put32(s.out.data() + 4, static_cast<std::uint32_t>(config.requestBytes));
    put64(s.out.data() + 8, id);
    put32(s.out.data() + 16, static_cast<std::uint32_t>(worldRank));
    put32(s.out.data() + 20, 0);
    for (std::int64_t i = 0; i < config.requestBytes; ++i) s.out[kRequestHeader + static_cast<std::size_t>(i)] = requestByte(id, i);
    s.tArrival = arrival[static_cast<std::size_t>(request)];
    s.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s.fd < 0) systemFailure("socket");
    setNoDelay(s.fd);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = address.ipv4;  // from the chosen interface: the server checks it
    if (bind(s.fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0)
      systemFailure("bind to " + ipv4Text(address.ipv4) + " (" + address.interface + ")");
    const auto& e = servers[static_cast<std::size_t>(s.server)];
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = e.ipv4;
    to.sin_port = htons(e.port);
    epoll_event ev{};
    ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<std::uint64_t>(&s - slots.data());
    if (epoll_ctl(epollFd, EPOLL_CTL_ADD, s.fd, &ev) != 0) systemFailure("epoll_ctl(request)");
    s.tStart = monotonicNow();
    s.expires = s.tStart + timeout;
    (void)now;
    if (connect(s.fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
      s.tConnected = monotonicNow();
      s.phase = ClientSlot::Phase::sending;
      sendSome(s, s.tConnected);
    } else if (errno != EINPROGRESS) {
      finish(s, errno == ECONNREFUSED ? "refused" : "reset", monotonicNow());
    }
  };
  auto receive = [&](ClientSlot& s) {
    for (;;) {
      const ssize_t n = recv(s.fd, scratch.data(), scratch.size(), 0);
      const std::int64_t now = monotonicNow();
      if (n == 0) {
        finish(s, s.chunk == static_cast<std::uint32_t>(config.chunks) ? (s.dataOk ? "ok" : "bad-data") : "reset", now);
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
          const std::size_t take = std::min(got - at, kChunkHeader - s.headerHave);
          std::memcpy(s.header + s.headerHave, scratch.data() + at, take);
          s.headerHave += take;
          at += take;
          if (s.headerHave < kChunkHeader) break;
          const auto magic = get32(s.header);
          if (magic == kBusyMagic || magic == kErrorMagic) {
            finish(s, magic == kBusyMagic ? "busy" : "server-error", now);
            return;
          }
          if (magic != kChunkMagic || get32(s.header + 4) != s.chunk ||
              get32(s.header + 8) != static_cast<std::uint32_t>(config.chunks) ||
              get32(s.header + 12) != static_cast<std::uint32_t>(config.chunkBytes)) {
            finish(s, "bad-data", now);
            return;
          }
          s.payloadLeft = config.chunkBytes;
          s.payloadAt = 0;
        }
        const auto take = static_cast<std::int64_t>(std::min<std::size_t>(got - at, static_cast<std::size_t>(s.payloadLeft)));
        const std::uint64_t id = get64(s.out.data() + 8);
        for (std::int64_t i = 0; i < take; ++i)
          if (scratch[at + static_cast<std::size_t>(i)] != chunkByte(id, s.chunk, s.payloadAt + i)) s.dataOk = false;
        at += static_cast<std::size_t>(take);
        s.payloadAt += take;
        s.payloadLeft -= take;
        s.bytes += take;
        if (s.payloadLeft == 0) {
          if (s.chunk > 0) {
            s.gapMax = std::max(s.gapMax, now - s.tLastChunk);
            if (s.request >= config.warmupRequests)
              samples.record(worldRank, s.request - config.warmupRequests, serverRanks[static_cast<std::size_t>(s.server)],
                             config.chunkBytes, s.tLastChunk, now, output::sample_flags::chunkGap);
          }
          s.tLastChunk = now;
          ++s.chunk;
          s.headerHave = 0;
        }
      }
    }
  };

  const runtime::watchdog::Watch watchAnswers("api requests to be answered", deadline.at());
  while (done < total) {
    if (deadline.expired()) deadline.fail("api requests to be answered");
    std::int64_t now = monotonicNow();
    for (auto& s : slots)
      if (s.phase != ClientSlot::Phase::free && s.expires <= now) finish(s, "timeout", now);
    for (auto& s : slots)
      if (s.phase == ClientSlot::Phase::free && next < total && arrival[static_cast<std::size_t>(next)] <= now)
        start(s, next++, now);
    std::int64_t wake = 0;
    const bool slotFree = std::any_of(slots.begin(), slots.end(), [](const ClientSlot& s) { return s.phase == ClientSlot::Phase::free; });
    if (next < total && slotFree) wake = arrival[static_cast<std::size_t>(next)];
    armTimer(timer, wake);
    const int ready = epoll_wait(epollFd, events.data(), static_cast<int>(events.size()), kPollMs);
    if (ready < 0 && errno != EINTR) systemFailure("epoll_wait");
    for (int i = 0; i < ready; ++i) {
      const auto tag = events[static_cast<std::size_t>(i)].data.u64;
      if (tag == kTimerTag) {
        drainTimer(timer);
        continue;
      }
      auto& s = slots[tag];
      if (s.phase == ClientSlot::Phase::free) continue;
      const auto what = events[static_cast<std::size_t>(i)].events;
      now = monotonicNow();
      if (s.phase == ClientSlot::Phase::connecting && (what & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int error = 0;
        socklen_t length = sizeof error;
        getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &length);
        if (error != 0) {
          finish(s, error == ECONNREFUSED ? "refused" : "reset", now);
          continue;
        }
        s.tConnected = now;
        s.phase = ClientSlot::Phase::sending;
        sendSome(s, now);
        if (s.phase == ClientSlot::Phase::free) continue;
      } else if (s.phase == ClientSlot::Phase::sending && (what & EPOLLOUT)) {
        sendSome(s, now);
        if (s.phase == ClientSlot::Phase::free) continue;
      }
      if (s.phase == ClientSlot::Phase::receiving && (what & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) receive(s);
    }
  }
  return outcome;
}

}  // namespace fabscope::suite::api
