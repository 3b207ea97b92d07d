#pragma once
// Who sends which request to whom, and when requests arrive. Pure functions
// of the configuration and the seed, so every rank computes the same plan
// without talking, and the unit tests can pin it down.
#include <cstdint>
#include <vector>

namespace fabscope::suite::kvpush {

// Request `index` (0-based, warm-up included) of prefill rank `prefill` goes
// to decode rank number decodeIndexOf(...) in [0, decodeCount): requests
// rotate over the decode ranks, starting at a different one per prefill rank,
// so P prefill ranks spread evenly over D decode ranks and many-to-one
// (D = 1) sends everything to the one decode rank.
int decodeIndexOf(int prefill, int index, int decodeCount);

// The request indices of `prefill` that decode rank `decode` receives, in the
// order they are sent (ascending).
std::vector<int> requestsFromPrefill(int prefill, int decode, int decodeCount, int requestsPerPrefill);

// Ring rotation of the roles (RoleRotation::ring) over N measuring ranks.
// One cycle is N / gcd(N, P) rounds; in round r of cycle c the prefill block
// starts at (r x P) mod N and the decode block P x k ranks after it, with
// k = 1 + c mod floor((N - D) / P): every cycle pairs each prefill block with
// another decode partner, so a rank's receive side (and its send side) is seen
// with several partners and a slow pair is told from a slow rank. The ranks
// with no role in a round keep the remaining positions in order.
int ringRoundsOf(int prefillRanks, int measuringRanks);
// The measuring-rank position of every role position in round `round` (roles
// [0, P) prefill, [P, P + D) decode, the rest idle): a permutation of [0, N).
std::vector<int> rotatedPositionsOf(int round, int prefillRanks, int decodeRanks, int measuringRanks);
// The role position of measuring rank `position` in `round` (the inverse).
int roleInRoundOf(int position, int round, int prefillRanks, int decodeRanks, int measuringRanks);

// Globally unique id of a request (the fill pattern and the file use it).
inline std::uint64_t requestIdOf(int prefill, int index, int requestsPerPrefill) {
  return static_cast<std::uint64_t>(prefill) * static_cast<std::uint64_t>(requestsPerPrefill) +
         static_cast<std::uint64_t>(index);
}

// Open loop: arrival offsets (ns from the start) of `count` requests of a
// Poisson process with `ratePerSecond`, exponential gaps drawn from a
// mt19937_64 seeded with `seed` by inversion (the same sequence with every
// standard library). Ascending; the first arrival is one gap after 0.
std::vector<std::int64_t> poissonArrivalOffsetsNs(int count, double ratePerSecond, std::uint64_t seed);

// Seed of one prefill rank's arrival process, distinct per rank.
std::uint64_t arrivalSeedOf(std::uint64_t instanceSeed, int prefill);

// For transports that match in posting order (NCCL): the requests decode
// rank `decode` receives, as (prefill, index) in the one order every rank
// agrees on, by index then prefill. Prefill ranks send in index order, so a
// decode rank that posts its receives in this order never waits on a
// receive whose message is queued behind one it has not posted yet.
struct ExpectedRequest {
  int prefill;
  int index;
};
std::vector<ExpectedRequest> inOrderReceivesOf(int decode, int prefillCount, int decodeCount, int requestsPerPrefill);

// Message tags of the sequence-th request of one (prefill -> decode) stream.
// Tags repeat after tagCycle requests; a receiver posts at most in_flight
// (<= 64) requests ahead per sender, so a repeated tag is never ambiguous.
//   header:  push: the request header; push-put: the notification after the
//            data landed; pull: "ready" (header + where the blocks are)
//   data:    push: the KV messages; pull: "layer l is ready" (layer-stream)
//   control: push-put: the decode rank's grant (where to write), pull: the
//            prefill rank's block list
//   release: pull: the decode rank is done reading (prefill frees its blocks)
inline constexpr int tagCycle = 1024;
inline constexpr int tagBase = 4096;
inline int headerTagOf(int sequence) { return tagBase + 4 * (sequence % tagCycle); }
inline int dataTagOf(int sequence) { return tagBase + 4 * (sequence % tagCycle) + 1; }
inline int controlTagOf(int sequence) { return tagBase + 4 * (sequence % tagCycle) + 2; }
inline int releaseTagOf(int sequence) { return tagBase + 4 * (sequence % tagCycle) + 3; }

}  // namespace fabscope::suite::kvpush
