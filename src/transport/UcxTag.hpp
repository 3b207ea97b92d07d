#pragma once
// How fabscope's (source rank, user tag) pairs map onto UCX's single 64-bit
// tag. UCX matches on the tag only (it has no notion of a source rank), so
// the sender's rank is part of the tag and receives use a full mask: a
// receive posted for rank 3 can never match a message from rank 5.
//
//   bits 63..56  epoch     bumped by every reset(), so messages left in flight
//                          by a timed-out test can never match the next test
//   bits 55..32  source    rank of the sender (up to 2^24 ranks)
//   bits 31..0   user tag  the tag the test passed to postSend/postRecv
#include <cstdint>

namespace fabscope::transport::ucx_tag {

inline constexpr int epochBits = 8;
inline constexpr int sourceBits = 24;
inline constexpr int userBits = 32;
inline constexpr std::uint64_t maxSourceRank = (std::uint64_t{1} << sourceBits) - 1;
inline constexpr std::uint64_t fullMask = ~std::uint64_t{0};

constexpr std::uint64_t pack(std::uint32_t epoch, std::uint32_t sourceRank, std::uint32_t userTag) noexcept {
  return (static_cast<std::uint64_t>(epoch & ((1u << epochBits) - 1)) << (sourceBits + userBits)) |
         ((static_cast<std::uint64_t>(sourceRank) & maxSourceRank) << userBits) | static_cast<std::uint64_t>(userTag);
}

constexpr std::uint32_t epochOf(std::uint64_t tag) noexcept {
  return static_cast<std::uint32_t>(tag >> (sourceBits + userBits));
}
constexpr std::uint32_t sourceOf(std::uint64_t tag) noexcept {
  return static_cast<std::uint32_t>((tag >> userBits) & maxSourceRank);
}
constexpr std::uint32_t userTagOf(std::uint64_t tag) noexcept { return static_cast<std::uint32_t>(tag); }

}  // namespace fabscope::transport::ucx_tag
