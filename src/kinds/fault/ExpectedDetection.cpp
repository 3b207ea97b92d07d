#include "kinds/fault/ExpectedDetection.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace fabscope::suite {
namespace {

constexpr double never = std::numeric_limits<double>::infinity();

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

int integerVariable(const std::function<const char*(const char*)>& lookup, const char* name, int fallback, int min,
                    int max) {
  const char* value = lookup(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (*end != '\0' || v < min || v > max)
    throw std::invalid_argument(std::string(name) + "=" + value + ": expected an integer " + std::to_string(min) +
                                " .. " + std::to_string(max));
  return static_cast<int>(v);
}

double timeVariable(const std::function<const char*(const char*)>& lookup, const char* name, double fallback) {
  const char* value = lookup(name);
  if (value == nullptr || *value == '\0') return fallback;
  try {
    return parseUcxTime(value, fallback);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(name) + "=" + value + ": " + e.what());
  }
}

// The fault as the transport sees it.
enum class Seen { peerGone, peerSilentButUp, linkCut, partialLoss };
Seen seenAs(const std::string& fault, double lossPercent) {
  if (fault == "kill") return Seen::peerGone;
  if (fault == "hang") return Seen::peerSilentButUp;
  if (fault == "loss" && lossPercent < 100) return Seen::partialLoss;
  return Seen::linkCut;  // link-down, flap, loss 100 %
}

// RDMA reliable connection (NCCL's IB transport and the verbs backend alike).
ExpectedDetection expectedRc(const std::string& stack, const std::string& fault, int timeout, int retries,
                             const std::string& settings) {
  const double budget = ibRetryBudgetSeconds(timeout, retries);
  const std::string formula = "4.096 us x 2^" + std::to_string(timeout) + " x (" + std::to_string(retries) +
                              " + 1) = " + number(budget) + " s (" + settings + ")";
  switch (seenAs(fault, 100)) {
    case Seen::peerSilentButUp:
      return {stack, never, "never: a hung process's HCA still acknowledges every packet"};
    case Seen::partialLoss:
      return {stack, never, "never: the RC retries get through a partially lossy link"};
    case Seen::peerGone:
      // The dead process's QPs are destroyed; packets to them are dropped
      // unanswered, so the sender's retries run out.
      return {stack, budget, "QP retry budget after the peer's QPs vanish: " + formula};
    case Seen::linkCut:
      break;
  }
  return {stack, budget, "QP retry budget: " + formula};
}

}  // namespace

double ibRetryBudgetSeconds(int timeoutExponent, int retryCount) {
  return transport::verbs::lostPeerSeconds(timeoutExponent, retryCount);
}

double tcpRetransmissionBudgetSeconds(int retries2, double rtoMinSeconds, double rtoMaxSeconds) {
  // tcp_model_timeout(): linear_backoff_thresh = ilog2(TCP_RTO_MAX / rto_base);
  // up to it the RTO doubles, past it every retry waits TCP_RTO_MAX.
  const int thresh = static_cast<int>(std::floor(std::log2(rtoMaxSeconds / rtoMinSeconds)));
  if (retries2 <= thresh) return (std::ldexp(2.0, retries2) - 1) * rtoMinSeconds;
  return (std::ldexp(2.0, thresh) - 1) * rtoMinSeconds + (retries2 - thresh) * rtoMaxSeconds;
}

double tcpKeepaliveSeconds(double idleSeconds, double intervalSeconds, int count) {
  return idleSeconds + intervalSeconds * count;
}

double parseUcxTime(const std::string& text, double automatic) {
  if (text == "inf") return never;
  if (text == "auto") return automatic;
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("expected a time such as 10s, 500ms, 2000000.00us, inf or auto");
  }
  const std::string unit = text.substr(used);
  if (value < 0) throw std::invalid_argument("a time cannot be negative");
  // UCX's own units (ucs_config_sscanf_time): s when none is given.
  if (unit.empty() || unit == "s") return value;
  if (unit == "ms") return value * 1e-3;
  if (unit == "us") return value * 1e-6;
  if (unit == "ns") return value * 1e-9;
  if (unit == "m") return value * 60;
  if (unit == "h") return value * 3600;
  throw std::invalid_argument("unknown time unit '" + unit + "' (s, ms, us, ns, m, h)");
}

StackSettings stackSettingsFrom(const std::function<const char*(const char*)>& lookup,
                                const std::function<int(const char*, int)>& readProc) {
  StackSettings s;
  s.tcpRetries2 = readProc("/proc/sys/net/ipv4/tcp_retries2", s.tcpRetries2);
  s.kernelKeepaliveProbes = readProc("/proc/sys/net/ipv4/tcp_keepalive_probes", s.kernelKeepaliveProbes);
  s.ucxTcpKeepIdle = timeVariable(lookup, "UCX_TCP_KEEPIDLE", s.ucxTcpKeepIdle);
  s.ucxTcpKeepIntvl = timeVariable(lookup, "UCX_TCP_KEEPINTVL", s.ucxTcpKeepIntvl);
  if (const char* v = lookup("UCX_TCP_KEEPCNT"); v != nullptr && std::string(v) != "auto")
    s.ucxTcpKeepCnt = integerVariable(lookup, "UCX_TCP_KEEPCNT", -1, 1, 1 << 20);
  s.ucxKeepaliveInterval = timeVariable(lookup, "UCX_KEEPALIVE_INTERVAL", s.ucxKeepaliveInterval);
  if (const char* v = lookup("UCX_TLS")) s.ucxTls = v;
  // NCCL accepts NCCL_IB_TIMEOUT 1..31 (0 is invalid there) and NCCL_IB_RETRY_CNT 0..7.
  s.ncclIbTimeout = integerVariable(lookup, "NCCL_IB_TIMEOUT", s.ncclIbTimeout, 1, 31);
  s.ncclIbRetryCnt = integerVariable(lookup, "NCCL_IB_RETRY_CNT", s.ncclIbRetryCnt, 0, 7);
  return s;
}

StackSettings stackSettingsHere() {
  return stackSettingsFrom([](const char* name) { return static_cast<const char*>(std::getenv(name)); },
                           [](const char* path, int fallback) {
                             std::ifstream in(path);
                             int v = fallback;
                             if (!(in >> v)) return fallback;
                             return v;
                           });
}

ExpectedDetection expectedForDrill(const std::string& fault, double lossPercent, const std::string& transport,
                                   const StackSettings& s) {
  if (transport == "nccl") {
    // The drill over NCCL runs its ranks on the GPUs of one host (across
    // hosts the InfiniBand figure, expected_nccl_ib_s, applies).
    const std::string stack = "NCCL within a host";
    if (fault != "kill" && fault != "hang") return {stack, std::nan(""), "not modelled for fault: " + fault};
    return {stack, never,
            "never: NCCL's transports within a host (NVLink, PCIe peer-to-peer, shared memory) have no timeout, "
            "a survivor's kernel waits for the lost peer's data without bound and no asynchronous error is "
            "raised (assumed here, not yet seen on hardware: the drill's detection_path shows what came)"};
  }
  if (transport != "ucx") return {transport, std::nan(""), "not modelled for transport " + transport};
  // The emulated cluster and most Ethernet sites run UCX over TCP; with
  // UCX_TLS naming no tcp transport the figure would be another's.
  if (!s.ucxTls.empty() && s.ucxTls.find("tcp") == std::string::npos && s.ucxTls.find("all") == std::string::npos)
    return {"UCX over " + s.ucxTls, std::nan(""), "not modelled for UCX_TLS=" + s.ucxTls};
  const std::string stack = "UCX over TCP";
  const int keepCount = s.ucxTcpKeepCnt > 0 ? s.ucxTcpKeepCnt : s.kernelKeepaliveProbes;
  const double keepalive = tcpKeepaliveSeconds(s.ucxTcpKeepIdle, s.ucxTcpKeepIntvl, keepCount);
  const std::string keepaliveText = "UCX_TCP_KEEPIDLE " + number(s.ucxTcpKeepIdle) + " s + UCX_TCP_KEEPINTVL " +
                                    number(s.ucxTcpKeepIntvl) + " s x " + std::to_string(keepCount) +
                                    " probes = " + number(keepalive) + " s, idle connections only";
  switch (seenAs(fault, lossPercent)) {
    case Seen::peerGone:
      return {stack, 0, "at once: the killed process's kernel closes its sockets (FIN/RST), UCX fails the endpoint"};
    case Seen::peerSilentButUp:
      return {stack, never,
              "never: a hung process's kernel still acknowledges TCP, and UCP keepalive (UCX_KEEPALIVE_INTERVAL " +
                  number(s.ucxKeepaliveInterval) + " s) rides the same connection"};
    case Seen::partialLoss:
      return {stack, never, "never: TCP retransmits through " + number(lossPercent) + " % loss"};
    case Seen::linkCut:
      break;
  }
  const double retransmission = tcpRetransmissionBudgetSeconds(s.tcpRetries2);
  return {stack, retransmission,
          "TCP retransmission budget with data in flight: tcp_retries2 " + std::to_string(s.tcpRetries2) +
              " from RTO 200 ms doubling to 120 s = " + number(retransmission) + " s (" + keepaliveText + ")"};
}

ExpectedDetection expectedNcclIb(const std::string& fault, const StackSettings& s) {
  return expectedRc(
      "NCCL over InfiniBand", fault, s.ncclIbTimeout, s.ncclIbRetryCnt,
      "NCCL_IB_TIMEOUT=" + std::to_string(s.ncclIbTimeout) + ", NCCL_IB_RETRY_CNT=" + std::to_string(s.ncclIbRetryCnt));
}

ExpectedDetection expectedVerbsQp(const std::string& fault, const transport::verbs::VerbsOptions& verbs) {
  return expectedRc("verbs RC queue pair", fault, verbs.timeout, verbs.retryCount,
                    "FABSCOPE_VERBS_TIMEOUT=" + std::to_string(verbs.timeout) +
                        ", FABSCOPE_VERBS_RETRY_CNT=" + std::to_string(verbs.retryCount));
}

}  // namespace fabscope::suite
