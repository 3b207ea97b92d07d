// The watchdog ends a rank whose wait never returns (a poll stuck inside a
// library), naming the rank, host and the wait, with exit code 3; a wait that
// returns in time, or one that fails at its deadline as usual, is left alone.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "runtime/Deadline.hpp"
#include "runtime/Errors.hpp"
#include "runtime/Watchdog.hpp"
#include "runtime/WatchdogRanks.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace fabscope;

namespace {

void stuckWait() {
  runtime::watchdog::start(7, "hostA", 0.3);
  const auto deadline = runtime::Deadline::afterSeconds(0.2);
  // A poll that does not return: the loop never gets to check its deadline.
  runtime::waitUntil(
      [] {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return true;
      },
      deadline, "a reply from rank 3");
}

// A call with no poll loop of its own (a teardown call such as MPI_Finalize)
// that never returns, watched for a named peer whose host is known.
void stuckCallOnAPeer() {
  runtime::watchdog::start(2, "hostC", 0.3);
  runtime::watchdog::knowHosts({"hostA", "hostB", "hostC", "hostD"});
  const runtime::watchdog::Watch watch("UCX to close an endpoint", runtime::watchdog::secondsFromNow(0.2), 3);
  std::this_thread::sleep_for(std::chrono::seconds(30));
}

}  // namespace

TEST(Watchdog, NamesThePeerOfACallThatNeverReturns) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_EXIT(stuckCallOnAPeer(), ::testing::ExitedWithCode(3),
              "rank 2 \\(hostC\\): watchdog: still waiting for UCX to close an endpoint on rank 3 \\(hostD\\) .* "
              "after its deadline");
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(10));
}

TEST(Watchdog, EndsARankWhosePollNeverReturns) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_EXIT(stuckWait(), ::testing::ExitedWithCode(3),
              "rank 7 \\(hostA\\): watchdog: still waiting for a reply from rank 3 .* after its deadline");
  // deadline 0.2 s + grace 0.3 s + one look (0.25 s), far below the poll's 30 s
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(10));
}

TEST(Watchdog, LeavesWaitsThatReturnOrFailAtTheirDeadline) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        runtime::watchdog::start(1, "hostB", 0.2);
        int polls = 0;
        runtime::waitUntil([&] { return ++polls == 1000; }, runtime::Deadline::afterSeconds(5), "a quick reply");
        try {
          runtime::waitUntil([] { return false; }, runtime::Deadline::afterSeconds(0.1), "nothing");
        } catch (const RuntimeFailure&) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(800));  // past both deadlines + grace
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// The grace is seconds past the deadline: a call still inside it (a teardown that
// returns late, a blocking wait that sees its deadline a few waits after it) is
// left alone; the watchdog looks every 0.25 s, so a grace read 1000x too short
// ends this rank long before the 0.7 s are over.
TEST(Watchdog, WaitsOutItsGraceBeforeEndingARank) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        runtime::watchdog::start(1, "hostB", 3.0);
        const runtime::watchdog::Watch watch("a slow teardown", runtime::watchdog::secondsFromNow(0.05), 2);
        std::this_thread::sleep_for(std::chrono::milliseconds(700));  // past the deadline, inside the grace
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

namespace {
// A collective that never returns while a rank of this host is stopped: the
// watchdog's line names that rank (found in /proc, without MPI).
void stuckCollectiveWithAStoppedRank() {
  const pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never left behind, stopped, once the watchdog ends its parent
    raise(SIGSTOP);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, WUNTRACED);  // stopped now
  runtime::watchdog::start(0, "hostA", 0.3);
  runtime::watchdog::knowHosts({"hostA", "hostA", "hostB"});
  runtime::watchdog::knowPids({getpid(), child, 1});
  const runtime::watchdog::Watch watch("an allreduce", runtime::watchdog::secondsFromNow(0.2),
                                       runtime::watchdog::everyRank);
  std::this_thread::sleep_for(std::chrono::seconds(30));
}
}  // namespace

TEST(Watchdog, NamesTheStoppedRankOfItsHost) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(stuckCollectiveWithAStoppedRank(), ::testing::ExitedWithCode(3),
              "rank 0 \\(hostA\\): watchdog: still waiting for an allreduce on every rank of the collective .*"
              "on this host rank 1 \\(hostA\\) is stopped \\(pid [0-9]+\\)");
}

namespace {
// A library that crashes inside a wait on a peer (Open MPI's shared-memory path
// reading a dead peer's fragment did so in the no-hang campaign).
void crashInsideAWait() {
  runtime::watchdog::start(0, "hostA", 0.3);
  runtime::watchdog::knowHosts({"hostA", "hostB"});
  const runtime::watchdog::Watch watch("an allreduce", runtime::watchdog::secondsFromNow(5), 1);
  raise(SIGSEGV);
}
}  // namespace

TEST(Watchdog, ACrashInsideAWaitEndsTheRankWithOneLineAndExitCode3) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "under AddressSanitizer the watchdog leaves fatal signals to the sanitizer's report";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(crashInsideAWait(), ::testing::ExitedWithCode(3),
              "rank 0 \\(hostA\\): watchdog: crashed with signal 11 \\([^)]*\\) while waiting for an allreduce on "
              "rank 1 \\(hostB\\) .*exit code 3");
}

namespace {
// A wait on one peer that misses its deadline: its error names the peer's rank
// and host, as the watchdog's line would (in a child: the hosts are set once a process).
[[noreturn]] void missedWaitOnAPeer() {
  runtime::watchdog::knowHosts({"hostA", "hostB"});
  try {
    runtime::waitUntil([] { return false; }, runtime::Deadline::afterSeconds(0.05),
                       "a UCX transfer to or from a peer rank", 1);
  } catch (const DeadlineExceeded& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::fflush(stderr);
    _exit(0);
  }
  _exit(1);
}
}  // namespace

TEST(Deadline, AMissedWaitOnOnePeerNamesItsRankAndHost) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(missedWaitOnAPeer(), ::testing::ExitedWithCode(0),
              "deadline exceeded while waiting for a UCX transfer to or from a peer rank on rank 1 \\(hostB\\) "
              "\\([0-9]+ ms past the deadline\\)");
}

TEST(Deadline, AMissedCollectiveNamesNoRank) {
  try {
    runtime::waitUntil([] { return false; }, runtime::Deadline::afterSeconds(0.01), "an allreduce",
                       runtime::watchdog::everyRank);
    FAIL() << "the wait did not fail";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("waiting for an allreduce ("), std::string::npos) << e.what();
  }
}
