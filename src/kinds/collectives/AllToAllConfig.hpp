#pragma once
// The scenario keys of the `alltoall` kind (MoE dispatch and combine), read and
// checked once at load. One instance per size: the size is a rank's dispatch
// payload with one copy per token (tokens x dispatch bytes per token), so
//   sizes: {derive: moe-dispatch, tokens: [1, 128]}
// gives one instance per tokens-per-rank count; literal sizes must be whole
// multiples of the dispatch bytes per token.
#include <cstdint>
#include <string>

#include "kinds/collectives/MoeRouting.hpp"
#include "scenario/Scenario.hpp"

namespace fabscope::suite::moe {

struct AllToAllConfig final : scenario::KindConfig {
  RoutingSpec routing;
  std::int64_t dispatchTokenBytes = 0;  // one token copy in the dispatch (header + payload + scales)
  std::int64_t combineTokenBytes = 0;   // one expert result returned in the combine
  std::string modelName;                // "" when the sizes were given without a model
  std::string sizeSource;               // how the per-token sizes were found, for `fabscope list`
  bool onDevice = false;                // NCCL on GPU memory; else MPI on host memory
};

// The kind's parse step (at load). Throws scenario::ScenarioError "file:line:column: message".
AllToAllConfig readAllToAllConfig(const scenario::TestSpec& spec, const scenario::TestSource& source);

// The tokens per rank of an instance of `bytes`; throws ScenarioError at the
// test's sizes when `bytes` is not a whole number of token copies.
std::int64_t tokensOf(const AllToAllConfig& c, std::int64_t bytes, const scenario::TestSpec& spec);

// Header of every token copy (dispatch) and expert result (combine), 16 bytes
// as DeepEP's per-token source info: the receiver checks who sent what.
struct TokenHeader {
  std::int32_t source;  // rank whose token it is
  std::int32_t token;   // index among the source's tokens
  std::int32_t holder;  // dispatch: rank it was sent to; combine: rank that returns it
  std::int32_t magic;   // kDispatchMagic or kCombineMagic
};
static_assert(sizeof(TokenHeader) == 16);
constexpr std::int32_t kDispatchMagic = 0x44535054;  // "DSPT"
constexpr std::int32_t kCombineMagic = 0x434d4249;   // "CMBI"

// Byte i (after the header) of a token copy: depends on every field of the
// header, so a copy landing in the wrong place or mixed with another fails.
inline std::uint8_t payloadByte(const TokenHeader& h, std::size_t i) {
  return static_cast<std::uint8_t>((static_cast<std::uint32_t>(h.source) * 131u +
                                    static_cast<std::uint32_t>(h.token) * 31u +
                                    static_cast<std::uint32_t>(h.holder) * 17u + static_cast<std::uint32_t>(h.magic) +
                                    static_cast<std::uint32_t>(i) * 7u) &
                                   0xffu);
}

}  // namespace fabscope::suite::moe
