#include "kinds/collectives/MoeExchange.hpp"

#include <algorithm>
#include <cstring>

namespace fabscope::suite::moe {

void writeCopy(std::byte* at, const TokenHeader& h, std::int64_t bytes) {
  std::memcpy(at, &h, sizeof h);
  auto* payload = reinterpret_cast<std::uint8_t*>(at + sizeof h);
  for (std::size_t i = 0; i + sizeof h < static_cast<std::size_t>(bytes); ++i) payload[i] = moe::payloadByte(h, i);
}

std::string checkCopy(const std::byte* at, const TokenHeader& expected, std::int64_t bytes) {
  TokenHeader h;
  std::memcpy(&h, at, sizeof h);
  if (h.source != expected.source || h.token != expected.token || h.holder != expected.holder ||
      h.magic != expected.magic)
    return "header (source " + std::to_string(h.source) + ", token " + std::to_string(h.token) + ", holder " +
           std::to_string(h.holder) + ") where (source " + std::to_string(expected.source) + ", token " +
           std::to_string(expected.token) + ", holder " + std::to_string(expected.holder) + ") was due";
  const auto* payload = reinterpret_cast<const std::uint8_t*>(at + sizeof h);
  for (std::size_t i = 0; i + sizeof h < static_cast<std::size_t>(bytes); ++i)
    if (payload[i] != moe::payloadByte(h, i))
      return "payload byte " + std::to_string(i) + " of token " + std::to_string(h.token) + " from rank " +
             std::to_string(h.source) + " is " + std::to_string(payload[i]) + ", expected " +
             std::to_string(moe::payloadByte(h, i));
  return {};
}

MoeExchange::MoeExchange(const RoutingSpec& routing, std::int64_t dispatchTokenBytes, std::int64_t combineTokenBytes,
                         std::int64_t tokens, const runtime::Communicator& group, BufferArena& buffers,
                         std::uint64_t seed, const runtime::Deadline& deadline, const MakeMover& makeMover)
    : rank_(group.rank()), size_(group.size()), D_(dispatchTokenBytes), C_(combineTokenBytes) {
  const int n = size_, g = rank_;
  routing_ = routeTokens(routing, static_cast<int>(tokens), n, g, seed);
  sendCopies_.resize(static_cast<std::size_t>(n));
  recvCopies_.resize(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d)
    sendCopies_[static_cast<std::size_t>(d)] =
        static_cast<std::int64_t>(routing_.tokensTo[static_cast<std::size_t>(d)].size());
  {
    MPI_Request r;
    runtime::checkMpi(
        MPI_Ialltoall(sendCopies_.data(), 1, MPI_INT64_T, recvCopies_.data(), 1, MPI_INT64_T, group.handle(), &r),
        "MPI_Ialltoall(token counts)");
    group.complete(r, deadline, "the MoE token counts from the other ranks");
  }
  dispatch_ = ExchangeLayout::of(sendCopies_, recvCopies_, D_);
  combine_ = ExchangeLayout::of(recvCopies_, sendCopies_, C_);
  auto take = [&](std::int64_t bytes) {
    return buffers.allocate(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1)));
  };
  host_.dispatchOut = take(dispatch_.sendBytes);
  host_.dispatchIn = take(dispatch_.recvBytes);
  host_.combineOut = take(combine_.sendBytes);
  host_.combineIn = take(combine_.recvBytes);
  for (int d = 0; d < n; ++d) {
    std::byte* at = host_.dispatchOut + dispatch_.sendDispls[static_cast<std::size_t>(d)];
    for (const auto t : routing_.tokensTo[static_cast<std::size_t>(d)]) {
      writeCopy(at, {g, t, d, kDispatchMagic}, D_);
      at += D_;
    }
  }
  mover_ = makeMover(dispatch_, combine_, host_);
  mover_->firstDispatch();
  heldTokens_.resize(static_cast<std::size_t>(n));
  for (int s = 0; s < n; ++s) {
    const std::byte* at = host_.dispatchIn + dispatch_.recvDispls[static_cast<std::size_t>(s)];
    std::byte* out = host_.combineOut + combine_.sendDispls[static_cast<std::size_t>(s)];
    for (std::int64_t k = 0; k < recvCopies_[static_cast<std::size_t>(s)]; ++k, at += D_, out += C_) {
      TokenHeader h;
      std::memcpy(&h, at, sizeof h);
      heldTokens_[static_cast<std::size_t>(s)].push_back(h.token);
      writeCopy(out, {s, h.token, g, kCombineMagic}, C_);
    }
  }
  mover_->prepareTimed();
}

std::int64_t MoeExchange::dispatchNetBytes() const {
  return dispatch_.sendBytes - sendCopies_[static_cast<std::size_t>(rank_)] * D_;
}

std::int64_t MoeExchange::combineNetBytes() const {
  return combine_.sendBytes - recvCopies_[static_cast<std::size_t>(rank_)] * C_;
}

std::string MoeExchange::verify(bool corruptLast) {
  mover_->fetchResults();
  const int n = size_, g = rank_;
  if (corruptLast && dispatch_.recvBytes > 0)
    reinterpret_cast<std::uint8_t*>(host_.dispatchIn)[dispatch_.recvBytes - 1] ^= 0x5a;
  std::string problem;
  for (int s = 0; s < n && problem.empty(); ++s) {
    const std::byte* at = host_.dispatchIn + dispatch_.recvDispls[static_cast<std::size_t>(s)];
    for (const auto t : heldTokens_[static_cast<std::size_t>(s)]) {
      if (problem = checkCopy(at, {s, t, g, kDispatchMagic}, D_); !problem.empty()) break;
      at += D_;
    }
  }
  for (int d = 0; d < n && problem.empty(); ++d) {
    const std::byte* at = host_.combineIn + combine_.recvDispls[static_cast<std::size_t>(d)];
    for (const auto t : routing_.tokensTo[static_cast<std::size_t>(d)]) {
      if (problem = checkCopy(at, {g, t, d, kCombineMagic}, C_); !problem.empty()) break;
      at += C_;
    }
  }
  return problem;
}

}  // namespace fabscope::suite::moe
