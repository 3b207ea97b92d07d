#include "kinds/kvpush/KvPushSchedule.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "host/KvPattern.hpp"

namespace fabscope::suite::kvpush {

int decodeIndexOf(int prefill, int index, int decodeCount) {
  if (decodeCount < 1 || prefill < 0 || index < 0)
    throw std::invalid_argument("decodeIndexOf: prefill " + std::to_string(prefill) + ", index " +
                                std::to_string(index) + ", decode count " + std::to_string(decodeCount));
  return static_cast<int>((static_cast<std::int64_t>(prefill) + index) % decodeCount);
}

namespace {
void checkRing(int prefillRanks, int decodeRanks, int measuringRanks) {
  if (prefillRanks < 1 || decodeRanks < 1 || measuringRanks < prefillRanks + decodeRanks)
    throw std::invalid_argument("ring rotation: " + std::to_string(prefillRanks) + " prefill and " +
                                std::to_string(decodeRanks) + " decode ranks over " + std::to_string(measuringRanks) +
                                " measuring ranks");
}
}  // namespace

int ringRoundsOf(int prefillRanks, int measuringRanks) {
  checkRing(prefillRanks, 1, measuringRanks);
  return measuringRanks / std::gcd(measuringRanks, prefillRanks);
}

std::vector<int> rotatedPositionsOf(int round, int prefillRanks, int decodeRanks, int measuringRanks) {
  checkRing(prefillRanks, decodeRanks, measuringRanks);
  if (round < 0) throw std::invalid_argument("ring rotation: round " + std::to_string(round));
  const int n = measuringRanks, rounds = ringRoundsOf(prefillRanks, n);
  const int cycle = round / rounds, partners = (n - decodeRanks) / prefillRanks;
  const int start = static_cast<int>(static_cast<std::int64_t>(round % rounds) * prefillRanks % n);
  const int decodeOffset = prefillRanks * (1 + cycle % partners);
  // Offsets from the prefill block's start: prefill, decode, then the others in order.
  std::vector<int> offsets;
  offsets.reserve(static_cast<std::size_t>(n));
  for (int k = 0; k < prefillRanks; ++k) offsets.push_back(k);
  for (int k = 0; k < decodeRanks; ++k) offsets.push_back(decodeOffset + k);
  for (int k = prefillRanks; k < n; ++k)
    if (k < decodeOffset || k >= decodeOffset + decodeRanks) offsets.push_back(k);
  std::vector<int> positions;
  positions.reserve(offsets.size());
  for (const int offset : offsets) positions.push_back((start + offset) % n);
  return positions;
}

int roleInRoundOf(int position, int round, int prefillRanks, int decodeRanks, int measuringRanks) {
  const auto positions = rotatedPositionsOf(round, prefillRanks, decodeRanks, measuringRanks);
  const auto at = std::find(positions.begin(), positions.end(), position);
  if (at == positions.end())
    throw std::invalid_argument("ring rotation: position " + std::to_string(position) + " of " +
                                std::to_string(measuringRanks));
  return static_cast<int>(at - positions.begin());
}

std::vector<int> requestsFromPrefill(int prefill, int decode, int decodeCount, int requestsPerPrefill) {
  std::vector<int> out;
  for (int k = 0; k < requestsPerPrefill; ++k)
    if (decodeIndexOf(prefill, k, decodeCount) == decode) out.push_back(k);
  return out;
}

std::vector<ExpectedRequest> inOrderReceivesOf(int decode, int prefillCount, int decodeCount, int requestsPerPrefill) {
  std::vector<ExpectedRequest> out;
  for (int k = 0; k < requestsPerPrefill; ++k)
    for (int p = 0; p < prefillCount; ++p)
      if (decodeIndexOf(p, k, decodeCount) == decode) out.push_back({p, k});
  return out;
}

std::vector<std::int64_t> poissonArrivalOffsetsNs(int count, double ratePerSecond, std::uint64_t seed) {
  if (!(ratePerSecond > 0)) throw std::invalid_argument("Poisson arrivals need a rate above 0");
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(count));
  double t = 0;
  for (int i = 0; i < count; ++i) {
    // 53 random bits -> u in (0, 1]; -ln(u) / rate is an exponential gap.
    const double u = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
    t += -std::log(u) / ratePerSecond;
    out.push_back(static_cast<std::int64_t>(t * 1e9));
  }
  return out;
}

std::uint64_t arrivalSeedOf(std::uint64_t instanceSeed, int prefill) {
  return kernels::mix64(instanceSeed ^ (0xA5A5'5A5A'0F0F'F0F0ull + static_cast<std::uint64_t>(prefill)));
}

}  // namespace fabscope::suite::kvpush
