// The expected detection times a fault drill records next to its measured
// one: each formula against its published figure, the settings read from the
// environment and /proc, and what each stack would report for each fault.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "kinds/fault/ExpectedDetection.hpp"
#include "transport/VerbsOptions.hpp"

namespace fabscope {
namespace {

using suite::StackSettings;

TEST(ExpectedDetection, InfinibandRetryBudget) {
  // NCCL's defaults (NCCL_IB_TIMEOUT 20, NCCL_IB_RETRY_CNT 7): 4.096 us x 2^20 x 8 = 34.36 s,
  // the "about 30 s" operators quote.
  EXPECT_NEAR(suite::ibRetryBudgetSeconds(20, 7), 34.36, 0.01);
  EXPECT_NEAR(suite::ibRetryBudgetSeconds(14, 7), 0.537, 0.001);
  EXPECT_NEAR(suite::ibRetryBudgetSeconds(18, 0), 1.074, 0.001);
  EXPECT_TRUE(std::isinf(suite::ibRetryBudgetSeconds(0, 7)));
  // One figure with the verbs backend's own.
  for (int t : {1, 14, 20, 31})
    for (int r : {0, 3, 7})
      EXPECT_DOUBLE_EQ(suite::ibRetryBudgetSeconds(t, r), transport::verbs::lostPeerSeconds(t, r));
}

TEST(ExpectedDetection, TcpRetransmissionBudgetMatchesTheKernelDocumentation) {
  // ip-sysctl.rst: tcp_retries2 15 "yields a hypothetical timeout of 924.6 seconds";
  // the kernel's model counts (2^(n+1) - 1) RTO_MIN up to the last doubling.
  EXPECT_NEAR(suite::tcpRetransmissionBudgetSeconds(15), 924.6, 1e-9);
  EXPECT_NEAR(suite::tcpRetransmissionBudgetSeconds(3), 3.0, 1e-9);     // (2^4 - 1) x 0.2
  EXPECT_NEAR(suite::tcpRetransmissionBudgetSeconds(9), 204.6, 1e-9);   // the last doubling
  EXPECT_NEAR(suite::tcpRetransmissionBudgetSeconds(10), 324.6, 1e-9);  // then 120 s each
  EXPECT_NEAR(suite::tcpKeepaliveSeconds(10, 2, 9), 28, 1e-12);
}

TEST(ExpectedDetection, UcxTimes) {
  EXPECT_DOUBLE_EQ(suite::parseUcxTime("10000000.00us", 0), 10);
  EXPECT_DOUBLE_EQ(suite::parseUcxTime("500ms", 0), 0.5);
  EXPECT_DOUBLE_EQ(suite::parseUcxTime("20", 0), 20);
  EXPECT_DOUBLE_EQ(suite::parseUcxTime("2m", 0), 120);
  EXPECT_DOUBLE_EQ(suite::parseUcxTime("auto", 7), 7);
  EXPECT_TRUE(std::isinf(suite::parseUcxTime("inf", 0)));
  EXPECT_THROW(suite::parseUcxTime("soon", 0), std::invalid_argument);
  EXPECT_THROW(suite::parseUcxTime("3 weeks", 0), std::invalid_argument);
}

StackSettings settings(const std::map<std::string, std::string>& env, int retries2 = 15) {
  return suite::stackSettingsFrom(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      [&](const char* path, int fallback) {
        return std::string(path).ends_with("tcp_retries2") ? retries2 : fallback;
      });
}

TEST(ExpectedDetection, SettingsFromTheEnvironmentAndProc) {
  auto s = settings({{"NCCL_IB_TIMEOUT", "22"},
                     {"NCCL_IB_RETRY_CNT", "3"},
                     {"UCX_TCP_KEEPIDLE", "1s"},
                     {"UCX_TCP_KEEPCNT", "4"},
                     {"UCX_TLS", "tcp,self"}},
                    8);
  EXPECT_EQ(s.ncclIbTimeout, 22);
  EXPECT_EQ(s.ncclIbRetryCnt, 3);
  EXPECT_EQ(s.tcpRetries2, 8);
  EXPECT_DOUBLE_EQ(s.ucxTcpKeepIdle, 1);
  EXPECT_EQ(s.ucxTcpKeepCnt, 4);
  const auto d = settings({});
  EXPECT_EQ(d.ncclIbTimeout, 20);
  EXPECT_EQ(d.ncclIbRetryCnt, 7);
  try {
    settings({{"NCCL_IB_RETRY_CNT", "9"}});
    FAIL() << "NCCL_IB_RETRY_CNT 9 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL_IB_RETRY_CNT=9: expected an integer 0 .. 7"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(settings({{"UCX_TCP_KEEPINTVL", "often"}}), std::invalid_argument);
}

TEST(ExpectedDetection, WhatEachStackWouldReport) {
  const auto s = settings({});
  // UCX over TCP: a cut link (link-down, flap, 100 % loss) waits out the retransmission budget.
  for (const char* fault : {"link-down", "flap"}) {
    const auto e = suite::expectedForDrill(fault, 100, "ucx", s);
    EXPECT_EQ(e.stack, "UCX over TCP");
    EXPECT_NEAR(e.seconds, 924.6, 1e-9) << fault;
    EXPECT_NE(e.basis.find("tcp_retries2 15"), std::string::npos) << e.basis;
  }
  EXPECT_NEAR(suite::expectedForDrill("loss", 100, "ucx", settings({}, 5)).seconds, 12.6, 1e-9);
  EXPECT_TRUE(std::isinf(suite::expectedForDrill("loss", 10, "ucx", s).seconds));
  EXPECT_EQ(suite::expectedForDrill("kill", 100, "ucx", s).seconds, 0);
  EXPECT_TRUE(std::isinf(suite::expectedForDrill("hang", 100, "ucx", s).seconds));
  // Not modelled: said, not guessed.
  EXPECT_TRUE(std::isnan(suite::expectedForDrill("kill", 100, "ucx", settings({{"UCX_TLS", "sm,self"}})).seconds));
  // NCCL and verbs on InfiniBand: the QP retry budget for a cut link and a killed peer; never for a hang.
  EXPECT_NEAR(suite::expectedNcclIb("flap", s).seconds, 34.36, 0.01);
  EXPECT_NEAR(suite::expectedNcclIb("kill", s).seconds, 34.36, 0.01);
  EXPECT_NE(suite::expectedNcclIb("flap", s).basis.find("NCCL_IB_TIMEOUT=20, NCCL_IB_RETRY_CNT=7"), std::string::npos);
  EXPECT_TRUE(std::isinf(suite::expectedNcclIb("hang", s).seconds));
  EXPECT_NEAR(suite::expectedVerbsQp("link-down", transport::verbs::VerbsOptions{}).seconds, 0.537, 0.001);
}

// The verbs figure is the verbs transport's: its options as its own parser
// reads them (FABSCOPE_VERBS_TIMEOUT 18, _RETRY_CNT 0: 4.096 us x 2^18 x 1).
TEST(ExpectedDetection, VerbsFigureFollowsTheTransportsOptions) {
  const std::map<std::string, std::string> env{{"FABSCOPE_VERBS_TIMEOUT", "18"}, {"FABSCOPE_VERBS_RETRY_CNT", "0"}};
  const auto options = transport::verbs::verbsOptionsFrom([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  const auto e = suite::expectedVerbsQp("kill", options);
  EXPECT_NEAR(e.seconds, 1.074, 0.001);
  EXPECT_NE(e.basis.find("FABSCOPE_VERBS_TIMEOUT=18, FABSCOPE_VERBS_RETRY_CNT=0"), std::string::npos) << e.basis;
  EXPECT_TRUE(std::isinf(suite::expectedVerbsQp("hang", options).seconds));
}

}  // namespace
}  // namespace fabscope
