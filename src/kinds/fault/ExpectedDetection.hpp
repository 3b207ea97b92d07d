#pragma once
// What the communication stack in use would take, on its own, to report the
// fault a drill stages, with the settings in force where the drill runs: the
// yardstick next to fabscope's measured detection ("fabscope's drill detected
// in 0.4 s; NCCL as configured here would take about 34 s"). Pure formulas
// (sources cited at each) plus one function that reads the settings from the
// environment and /proc.
#include <functional>
#include <string>

#include "transport/VerbsOptions.hpp"

namespace fabscope::suite {

// InfiniBand RC queue pair: every transmission waits for its ACK
// 4.096 us x 2^timeout (the local ACK timeout; IBTA spec vol. 1, 9.7.6.1.3 and
// QP attribute `timeout` in ibv_modify_qp(3)) and is tried retry_cnt + 1
// times before the QP reports IBV_WC_RETRY_EXC_ERR. timeout 0: wait forever
// (infinity). The verbs transport's own figure (transport::verbs::lostPeerSeconds).
double ibRetryBudgetSeconds(int timeoutExponent, int retryCount);

// Linux TCP with unacknowledged data: the connection is given up after
// tcp_retries2 retransmissions, counted as if the RTO had started at
// TCP_RTO_MIN (200 ms) and doubled up to TCP_RTO_MAX (120 s)
// (net/ipv4/tcp_timer.c: tcp_model_timeout(); Documentation/networking/
// ip-sysctl.rst: "The default value of 15 yields a hypothetical timeout of
// 924.6 seconds").
double tcpRetransmissionBudgetSeconds(int retries2, double rtoMinSeconds = 0.2, double rtoMaxSeconds = 120);

// TCP keepalive on an idle connection: idle, then `count` probes `interval`
// apart (tcp(7): TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT). It never fires
// while data is unacknowledged (tcp_keepalive_timer() in net/ipv4/tcp_timer.c
// returns early when packets are out), so a drill's traffic falls under the
// retransmission budget instead.
double tcpKeepaliveSeconds(double idleSeconds, double intervalSeconds, int count);

// A UCX time value as ucx_info prints or a user sets it: "10s", "2000000.00us",
// "500ms", "20m", "inf", "auto" (auto: returns `automatic`). Throws
// std::invalid_argument on anything else.
double parseUcxTime(const std::string& text, double automatic);

// The settings the figures depend on, as found where the drill runs.
struct StackSettings {
  int tcpRetries2 = 15;           // /proc/sys/net/ipv4/tcp_retries2
  int kernelKeepaliveProbes = 9;  // /proc/sys/net/ipv4/tcp_keepalive_probes (UCX_TCP_KEEPCNT=auto)
  // UCX 1.13 defaults (ucx_info -c -f): the TCP transport's own keepalive and
  // the UCP keepalive round.
  double ucxTcpKeepIdle = 10, ucxTcpKeepIntvl = 2;
  int ucxTcpKeepCnt = -1;  // -1: auto (the kernel's probes)
  double ucxKeepaliveInterval = 20;
  std::string ucxTls;  // UCX_TLS as set ("" = UCX's choice)
  // NCCL over InfiniBand: NCCL_IB_TIMEOUT (default 20 in the NCCL
  // documentation's environment-variable page; older releases used lower
  // values) and NCCL_IB_RETRY_CNT (default 7).
  int ncclIbTimeout = 20, ncclIbRetryCnt = 7;
};
// `lookup` is std::getenv in production; `readProc` reads a /proc file's
// first integer or returns `fallback`. Throws std::invalid_argument naming a
// variable whose value cannot be read.
StackSettings stackSettingsFrom(const std::function<const char*(const char*)>& lookup,
                                const std::function<int(const char*, int)>& readProc);
StackSettings stackSettingsHere();

struct ExpectedDetection {
  std::string stack;   // "UCX over TCP", "NCCL over InfiniBand", ...
  double seconds = 0;  // +infinity: the stack would never report it
  std::string basis;   // the formula with this run's values
};
// What `transport` (the drill's) would take to report `fault` (kill, hang,
// link-down, loss, flap) with `lossPercent` for loss.
ExpectedDetection expectedForDrill(const std::string& fault, double lossPercent, const std::string& transport,
                                   const StackSettings& s);
// The same fault under NCCL over InfiniBand and under fabscope's verbs
// backend: what a serving stack on RDMA would see. The verbs figure takes the
// verbs transport's own options (transport::verbs::verbsOptionsFromEnvironment:
// the settings its queue pairs would be opened with here), never a second
// reading of its environment variables.
ExpectedDetection expectedNcclIb(const std::string& fault, const StackSettings& s);
ExpectedDetection expectedVerbsQp(const std::string& fault, const transport::verbs::VerbsOptions& verbs);

}  // namespace fabscope::suite
