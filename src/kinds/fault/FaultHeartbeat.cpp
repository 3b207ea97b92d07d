#include "kinds/fault/FaultHeartbeat.hpp"

#include <algorithm>

#include "runtime/Errors.hpp"

namespace fabscope::suite {

Heartbeats::Heartbeats(transport::Transport& transport, std::vector<int> peers, int firstSlot,
                       runtime::Nanoseconds interval, runtime::Nanoseconds deadline, std::uint64_t* buffers)
    : transport_(transport), firstSlot_(firstSlot), interval_(interval), deadline_(deadline), buffers_(buffers) {
  for (int rank : peers) peers_.push_back({rank});
}

void Heartbeats::postReceive(std::size_t i) {
  transport_.postRecv(recvSlot(i), peers_[i].rank, tag, &buffers_[2 * i + 1], sizeof(std::uint64_t));
}

void Heartbeats::start(runtime::Nanoseconds now) {
  nextSend_ = now;
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    peers_[i].lastHeard = now;
    postReceive(i);
  }
}

bool Heartbeats::tracking(int peer) const {
  return std::any_of(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.rank == peer && p.live && !p.left; });
}

void Heartbeats::forget(int peer) {
  for (auto& p : peers_)
    if (p.rank == peer) p.live = false;
}

void Heartbeats::watchForReturn(int peer) {
  for (auto& p : peers_)
    if (p.rank == peer) p.watched = true;
}

void Heartbeats::markSilent(int peer) {
  for (auto& p : peers_)
    if (p.rank == peer && p.watched) p.silent = true;
}

void Heartbeats::repost() {
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (!peers_[i].live || peers_[i].left) continue;
    try {
      postReceive(i);
    } catch (const RuntimeFailure&) {
      // Failed in the transport: the next poll's silence check reports it.
    }
  }
}

std::vector<Heartbeats::Loss> Heartbeats::poll(runtime::Nanoseconds now, bool& abandoned) {
  std::vector<Loss> lost;
  // This rank itself was away longer than the deadline (descheduled, stopped,
  // blocked): its peers' heartbeats may still sit unprogressed in the
  // transport, so their silence is counted again from now. A peer that is
  // really gone is then reported one deadline later; a live one is not
  // declared lost for this rank's own stall (seen: a worker continued after
  // 1.5 s declared every peer lost on its first poll).
  if (lastPoll_ >= 0 && now - lastPoll_ > deadline_)
    for (auto& p : peers_) p.lastHeard = std::max(p.lastHeard, now);
  lastPoll_ = now;
  const bool sendNow = now >= nextSend_;
  if (sendNow) nextSend_ = now + interval_;
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    Peer& p = peers_[i];
    if (!p.live || p.left) continue;
    try {
      // A send still in flight (the peer is not reading) is not doubled.
      if (sendNow && transport_.testSlots(sendSlot(i), 1)) {
        buffers_[2 * i] = ++p.sent;
        transport_.postSend(sendSlot(i), p.rank, tag, &buffers_[2 * i], sizeof(std::uint64_t));
      }
      // Drain what queued up, so an old heartbeat does not hide a new silence.
      for (int k = 0; k < 8 && transport_.testSlots(recvSlot(i), 1); ++k) {
        if (buffers_[2 * i + 1] == bye) {
          p.left = true;
          break;
        }
        if (p.silent) {
          p.silent = false;
          lost.push_back(
              {p.rank, now,
               "heartbeat: heard again after " + std::to_string((now - p.lastHeard) / 1000000) + " ms of silence",
               true});
        }
        p.lastHeard = now;
        postReceive(i);
      }
    } catch (const RuntimeFailure& e) {
      p.live = false;
      lost.push_back({p.rank, runtime::monotonicNow(), std::string("transport failure: ") + e.what()});
      abandoned = true;
      repost();
      continue;
    }
    if (!p.left && !p.silent && now - p.lastHeard > deadline_) {
      if (p.watched)
        p.silent = true;
      else
        p.live = false;
      lost.push_back({p.rank, now,
                      "heartbeat: none for " + std::to_string((now - p.lastHeard) / 1000000) + " ms (deadline " +
                          std::to_string(deadline_ / 1000000) + " ms)"});
    }
  }
  return lost;
}

void Heartbeats::sayBye(const runtime::Deadline& deadline) {
  std::vector<int> slots;
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    Peer& p = peers_[i];
    if (!p.live || p.silent) continue;  // a silent peer's earlier heartbeat may never leave
    try {
      // The slot's earlier heartbeat must be out before its buffer is reused.
      runtime::waitUntil([&] { return transport_.testSlots(sendSlot(i), 1); }, deadline, "a heartbeat send");
      buffers_[2 * i] = bye;
      transport_.postSend(sendSlot(i), p.rank, tag, &buffers_[2 * i], sizeof(std::uint64_t));
      slots.push_back(sendSlot(i));
    } catch (const std::exception&) {
      // A peer that cannot be told is gone or slow; leaving is still right.
    }
  }
  for (int s : slots) {
    try {
      transport_.waitSlots(s, 1, deadline);
    } catch (const std::exception&) {
    }
  }
}

}  // namespace fabscope::suite
