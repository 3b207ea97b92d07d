#pragma once
// The verbs transport's options (FABSCOPE_VERBS_*), read once, by the
// transport's own parser, and the time its queue pairs take to give up on a
// silent peer. Free of libibverbs, so every build has them: the fault kind
// asks the verbs transport what its queue pairs would do here (the
// expected_verbs_qp_s figure) even where the build has no verbs data path.
#include <functional>
#include <string>

namespace fabscope::transport::verbs {

struct VerbsOptions {
  std::string device;    // FABSCOPE_VERBS_DEVICE; empty = first device found
  int port = 1;          // FABSCOPE_VERBS_PORT (1..255)
  int gidIndex = -1;     // FABSCOPE_VERBS_GID_INDEX; -1 = choose (see chooseGid)
  int timeout = 14;      // FABSCOPE_VERBS_TIMEOUT: local ACK timeout exponent (0..31; 0 = wait forever)
  int retryCount = 7;    // FABSCOPE_VERBS_RETRY_CNT (0..7)
  int rnrRetry = 7;      // 7 = retry forever while the receiver has not posted a receive
  int minRnrTimer = 12;  // 0.64 ms, the IB spec encoding
  // FABSCOPE_VERBS_MAX_RD_ATOMIC (1..255): RDMA reads (gets) one queue pair may
  // have outstanding, to lower the agreed device maximum for experiments; 0 = no limit.
  int maxReadsInFlight = 0;
  std::string maxReadsInFlightFrom;  // what set maxReadsInFlight, for /transports/verbs
};

// Reads FABSCOPE_VERBS_* through `lookup` (std::getenv in production).
// Throws UsageError naming the variable and the accepted range.
VerbsOptions verbsOptionsFrom(const std::function<const char*(const char*)>& lookup);
VerbsOptions verbsOptionsFromEnvironment();

// A further limit on RDMA reads in flight (the scenario's transports.verbs.max_rd_atomic):
// the lower of it and what is already set wins; 0 leaves the options as they are.
void lowerReadsInFlight(VerbsOptions& options, int limit, const std::string& from);

// Seconds until an RC QP declares its peer lost: every transmission waits
// 4.096 us x 2^timeout for an ACK and is tried retry_cnt + 1 times.
// timeout 0 means "wait forever" (infinity).
double lostPeerSeconds(int timeout, int retryCount);

}  // namespace fabscope::transport::verbs
