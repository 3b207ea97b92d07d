#include "runtime/LossChannel.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>

namespace fabscope::runtime {
namespace {

enum Tag : int { callTag = 1, reportTag = 2, conclusionTag = 3, ackTag = 4, releaseTag = 5 };

// The one byte rank 0 sends to call a rank; static so an unfinished send never reads freed memory.
const char callByte = 1;

void appendInt(std::vector<std::byte>& out, std::int64_t v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

std::int64_t readInt(const std::vector<std::byte>& in, std::size_t& pos) {
  if (pos + sizeof(std::int64_t) > in.size()) throw RuntimeFailure("loss round: a report was cut short");
  std::int64_t v;
  std::memcpy(&v, in.data() + pos, sizeof v);
  pos += sizeof v;
  return v;
}

std::vector<std::byte> readBytes(const std::vector<std::byte>& in, std::size_t& pos) {
  const auto n = readInt(in, pos);
  if (n < 0 || pos + static_cast<std::size_t>(n) > in.size())
    throw RuntimeFailure("loss round: a report was cut short");
  std::vector<std::byte> out(in.begin() + static_cast<std::ptrdiff_t>(pos),
                             in.begin() + static_cast<std::ptrdiff_t>(pos + n));
  pos += static_cast<std::size_t>(n);
  return out;
}

// Receives a probed message without blocking past `deadline`; false if it did not arrive.
bool receiveProbed(MPI_Comm comm, const MPI_Status& probed, int tag, std::vector<std::byte>& out,
                   const Deadline& deadline) {
  int count = 0;
  MPI_Get_count(&probed, MPI_BYTE, &count);
  out.assign(static_cast<std::size_t>(count), std::byte{0});
  MPI_Request request;
  if (MPI_Irecv(out.data(), count, MPI_BYTE, probed.MPI_SOURCE, tag, comm, &request) != MPI_SUCCESS) return false;
  const watchdog::Watch watch("a loss-round message", deadline.at(), probed.MPI_SOURCE);
  int done = 0;
  while (!done) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done && deadline.expired()) return false;  // the request is left behind: the job ends soon
    if (!done) betweenPolls();
  }
  return true;
}

void pause() { std::this_thread::sleep_for(std::chrono::microseconds(200)); }

}  // namespace

std::vector<std::byte> encodeLossReport(const LossReport& report) {
  std::vector<std::byte> out;
  appendInt(out, static_cast<std::int64_t>(report.error.size()));
  const auto* e = reinterpret_cast<const std::byte*>(report.error.data());
  out.insert(out.end(), e, e + report.error.size());
  appendInt(out, static_cast<std::int64_t>(report.lost.size()));
  for (int r : report.lost) appendInt(out, r);
  appendInt(out, static_cast<std::int64_t>(report.samples.size()));
  out.insert(out.end(), report.samples.begin(), report.samples.end());
  return out;
}

LossReport decodeLossReport(const std::vector<std::byte>& bytes) {
  LossReport r;
  std::size_t pos = 0;
  const auto error = readBytes(bytes, pos);
  r.error.assign(reinterpret_cast<const char*>(error.data()), error.size());
  const auto lost = readInt(bytes, pos);
  if (lost < 0 || lost > (1 << 24))
    throw RuntimeFailure("loss round: a report names an impossible number of lost ranks");
  for (std::int64_t i = 0; i < lost; ++i) r.lost.push_back(static_cast<int>(readInt(bytes, pos)));
  r.samples = readBytes(bytes, pos);
  if (pos != bytes.size()) throw RuntimeFailure("loss round: a report has trailing bytes");
  return r;
}

LossChannel::LossChannel(const Communicator& world, const Deadline& deadline) {
  MPI_Request request;
  checkMpi(startDuplicate(world.handle(), &comm_, &request), "MPI_Comm_idup (loss channel)");
  int done = 0;
  waitUntil(
      [&] {
        checkMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Comm_idup (loss channel)");
        return done != 0;
      },
      deadline, "every rank to open the loss channel");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

// Not freed: MPI_Comm_free is collective in effect with pending traffic, and
// a channel that was used means the job is ending without MPI_Finalize.
LossChannel::~LossChannel() = default;

void LossChannel::watch() const {
  int flag = 0;
  MPI_Status status;
  if (rank_ == 0) {
    MPI_Iprobe(MPI_ANY_SOURCE, reportTag, comm_, &flag, &status);
    if (flag) throw LossRoundStarted("rank " + std::to_string(status.MPI_SOURCE) + " reported a lost or silent rank");
  } else {
    MPI_Iprobe(0, callTag, comm_, &flag, &status);
    if (flag) throw LossRoundStarted("rank 0 started a loss round");
  }
}

LossOutcome LossChannel::gather(LossReport mine, Nanoseconds answerWithin) const {
  const auto deadline = Deadline::after(answerWithin);
  const watchdog::Watch watch("the ranks' answers in a loss round", deadline.at(), watchdog::everyRank);
  LossOutcome out;
  std::set<int> lost(mine.lost.begin(), mine.lost.end());
  std::vector<char> answered(static_cast<std::size_t>(size_), 0);
  answered[0] = 1;
  out.reports.emplace_back(0, std::move(mine));
  auto receiveOne = [&] {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, reportTag, comm_, &flag, &status);
    if (!flag) return false;
    std::vector<std::byte> bytes;
    if (!receiveProbed(comm_, status, reportTag, bytes, deadline)) return false;
    auto report = decodeLossReport(bytes);
    answered[static_cast<std::size_t>(status.MPI_SOURCE)] = 1;
    lost.insert(report.lost.begin(), report.lost.end());
    out.reports.emplace_back(status.MPI_SOURCE, std::move(report));
    return true;
  };
  while (receiveOne()) {
  }
  for (int r = 1; r < size_; ++r) {
    if (answered[static_cast<std::size_t>(r)] || lost.count(r)) continue;
    MPI_Request request;
    // A called rank that is gone never receives it: the request is freed, not waited for.
    if (MPI_Isend(&callByte, 1, MPI_BYTE, r, callTag, comm_, &request) == MPI_SUCCESS) MPI_Request_free(&request);
  }
  auto everyoneKnown = [&] {
    for (int r = 1; r < size_; ++r)
      if (!answered[static_cast<std::size_t>(r)] && !lost.count(r)) return false;
    return true;
  };
  while (!everyoneKnown() && !deadline.expired())
    if (!receiveOne()) pause();
  for (int r = 1; r < size_; ++r)
    if (!answered[static_cast<std::size_t>(r)] && !lost.count(r)) out.silent.push_back(r);
  lost.insert(out.silent.begin(), out.silent.end());
  lost.erase(0);
  out.lost.assign(lost.begin(), lost.end());
  return out;
}

void LossChannel::conclude(const LossOutcome& outcome, const std::string& line, Nanoseconds ackWithin) const {
  const auto deadline = Deadline::after(ackWithin);
  const watchdog::Watch watch("the ranks to acknowledge a loss round's conclusion", deadline.at(), watchdog::everyRank);
  std::vector<MPI_Request> sends;
  std::vector<int> waitingFor;
  conclusion_ = line;  // kept by the channel for sends still pending when this returns
  for (const auto& [r, report] : outcome.reports) {
    if (r == 0) continue;
    MPI_Request request;
    if (MPI_Isend(conclusion_.data(), static_cast<int>(conclusion_.size()), MPI_BYTE, r, conclusionTag, comm_,
                  &request) != MPI_SUCCESS)
      continue;
    sends.push_back(request);
    waitingFor.push_back(r);
  }
  while (!waitingFor.empty() && !deadline.expired()) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, ackTag, comm_, &flag, &status);
    if (!flag) {
      int ignored = 0;
      if (!sends.empty()) MPI_Testall(static_cast<int>(sends.size()), sends.data(), &ignored, MPI_STATUSES_IGNORE);
      pause();
      continue;
    }
    char byte = 0;
    MPI_Recv(&byte, 1, MPI_BYTE, status.MPI_SOURCE, ackTag, comm_, MPI_STATUS_IGNORE);
    waitingFor.erase(std::remove(waitingFor.begin(), waitingFor.end(), status.MPI_SOURCE), waitingFor.end());
  }
}

std::string LossChannel::report(const LossReport& mine, Nanoseconds within) const {
  const auto deadline = Deadline::after(within);
  const watchdog::Watch watch("rank 0's conclusion of a loss round", deadline.at(), 0);
  // Kept by the channel: a send still pending when this returns must not read freed memory.
  outgoing_ = encodeLossReport(mine);
  MPI_Request send;
  if (MPI_Isend(outgoing_.data(), static_cast<int>(outgoing_.size()), MPI_BYTE, 0, reportTag, comm_, &send) !=
      MPI_SUCCESS)
    return {};
  bool sent = false;
  while (!deadline.expired()) {
    if (!sent) {
      int done = 0;
      MPI_Test(&send, &done, MPI_STATUS_IGNORE);
      sent = done != 0;
    }
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(0, conclusionTag, comm_, &flag, &status);
    if (!flag) {
      pause();
      continue;
    }
    std::vector<std::byte> line;
    if (!receiveProbed(comm_, status, conclusionTag, line, deadline)) break;
    return std::string(reinterpret_cast<const char*>(line.data()), line.size());
  }
  return {};  // rank 0 never concluded
}

void LossChannel::acknowledge() const {
  MPI_Request request;
  if (MPI_Isend(&callByte, 1, MPI_BYTE, 0, ackTag, comm_, &request) != MPI_SUCCESS) return;
  const auto deadline = Deadline::afterSeconds(1);
  const watchdog::Watch watch("rank 0 to take this rank's acknowledgement", deadline.at(), 0);
  int done = 0;
  while (!done && !deadline.expired()) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) pause();
  }
}

void LossChannel::release(int rank) const {
  MPI_Request request;
  // Freed, not waited for: a victim cut off never receives it.
  if (MPI_Isend(&callByte, 1, MPI_BYTE, rank, releaseTag, comm_, &request) == MPI_SUCCESS) MPI_Request_free(&request);
}

bool LossChannel::waitForRelease(Nanoseconds within) const {
  const auto deadline = Deadline::after(within);
  const watchdog::Watch watch("rank 0 to release this fault drill's victim", deadline.at(), 0);
  while (!deadline.expired()) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(0, releaseTag, comm_, &flag, &status);
    if (flag) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace fabscope::runtime
