#pragma once
// When a rank is lost or silent, collectives can no longer finish, but
// point-to-point messages between the ranks that still run do. The loss
// channel is a duplicate of MPI_COMM_WORLD kept for that moment (a "loss
// round"): a rank that learns of a loss reports to rank 0; rank 0 calls every
// rank it has not heard from, waits a bounded time for their reports, and
// names the ranks that stayed silent. Control-plane waits (Communicator::
// complete) watch the channel, so a rank waiting in a collective that can no
// longer finish joins the round at once instead of at its deadline.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "runtime/Mpi.hpp"

namespace fabscope::runtime {

// Thrown from a control-plane wait when another rank started a loss round.
class LossRoundStarted : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

// A peer is known to be gone (e.g. the transport's endpoint to it failed):
// the run ends now, without waiting for any deadline.
class PeerLost : public RuntimeFailure {
 public:
  PeerLost(const std::string& what, int peer) : RuntimeFailure(what), peer_(peer) {}
  int peer() const noexcept { return peer_; }

 private:
  int peer_;
};

// What one rank knows when it enters a loss round.
struct LossReport {
  std::string error;               // its own error ("" if none)
  std::vector<int> lost;           // ranks it knows are gone
  std::vector<std::byte> samples;  // rows of the test it was running (SampleRecord, global clock)
};

// Rank 0's view at the end of a round.
struct LossOutcome {
  std::vector<int> lost;                            // known lost, plus the silent ones
  std::vector<int> silent;                          // called, did not answer in time
  std::vector<std::pair<int, LossReport>> reports;  // rank 0's own first, then by arrival
};

// Wire form of a report (exposed for unit tests).
std::vector<std::byte> encodeLossReport(const LossReport& report);
LossReport decodeLossReport(const std::vector<std::byte>& bytes);

class LossChannel {
 public:
  // Collective over `world` (MPI_Comm_idup under `deadline`), before anything can be lost.
  LossChannel(const Communicator& world, const Deadline& deadline);
  ~LossChannel();
  LossChannel(const LossChannel&) = delete;
  LossChannel& operator=(const LossChannel&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  // Throws LossRoundStarted when a round has started: at rank 0 any report
  // waiting, elsewhere rank 0's call. Cheap when nothing is waiting.
  void watch() const;

  // Rank 0: calls every rank not known lost that has not reported yet,
  // collects reports for at most `answerWithin` ns, names the silent ranks.
  LossOutcome gather(LossReport mine, Nanoseconds answerWithin) const;
  // Rank 0: sends `line` to every rank that reported and waits at most
  // `ackWithin` ns for each to say it has printed it.
  void conclude(const LossOutcome& outcome, const std::string& line, Nanoseconds ackWithin) const;
  // Any other rank: sends its report to rank 0 and waits at most `within` ns
  // for rank 0's conclusion (returned; "" if none came).
  std::string report(const LossReport& mine, Nanoseconds within) const;
  // After printing the conclusion.
  void acknowledge() const;

  // The end of a fault drill: rank 0 tells a victim that is still alive that
  // the survivors are done (a victim whose link is really down never hears it
  // and is ended by the launcher instead).
  void release(int rank) const;
  // The victim: true once rank 0 released it, false after `within` ns.
  bool waitForRelease(Nanoseconds within) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  mutable std::vector<std::byte> outgoing_;
  mutable std::string conclusion_;
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace fabscope::runtime
