// The memory-kind registry (memory/MemoryKinds): one entry per kind, found by
// the scenario's name and by enum value, and the fill/verify/corrupt/zero
// helpers of every kind this build can run agree with each other.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fabscope/BuildConfig.hpp"
#include "memory/BufferArena.hpp"
#include "memory/MemoryKinds.hpp"
#include "runtime/Errors.hpp"

namespace fmem = fabscope::memory;
namespace fs = fabscope::suite;
using fabscope::transport::MemoryKind;

TEST(MemoryKinds, EveryKindHasOneEntryFoundByNameAndValue) {
  std::set<std::string> names;
  for (const auto& k : fmem::memoryKinds()) {
    EXPECT_TRUE(names.insert(k.name).second) << "two entries named " << k.name;
    EXPECT_EQ(&fmem::memoryKindOps(k.kind), &k) << k.name;
    EXPECT_EQ(&fmem::memoryKindOps(std::string(k.name)), &k) << k.name;
    EXPECT_EQ(fs::memoryKindOf(k.name), k.kind);
  }
  EXPECT_EQ(names, (std::set<std::string>{"host", "cuda", "cuda-host"}));
  EXPECT_TRUE(fmem::memoryKindOps(MemoryKind::host).hostAddressable);
  EXPECT_FALSE(fmem::memoryKindOps(MemoryKind::cuda).hostAddressable);
  EXPECT_STREQ(fmem::memoryKindOps(MemoryKind::host).unavailable, "");
  EXPECT_EQ(std::string(fmem::memoryKindOps(MemoryKind::cuda).unavailable).empty(), bool(FABSCOPE_HAVE_CUDA));
}

TEST(MemoryKinds, AnUnknownNameListsTheKnownOnes) {
  try {
    fmem::memoryKindOps(std::string("rocm"));
    FAIL() << "no error for an unknown memory kind";
  } catch (const fabscope::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'rocm'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("host, cuda, cuda-host"), std::string::npos) << e.what();
  }
}

TEST(MemoryKinds, HostArenaBuffersAreZeroedFilledCheckedAndCorrupted) {
  fs::BufferArena arena;
  constexpr std::size_t bytes = 8193;
  std::byte* p = arena.allocate(bytes, MemoryKind::host);
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u) << "host buffers are page-aligned";
  for (std::size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], std::byte{0}) << i;
  fs::fillPattern(p, bytes, 5, MemoryKind::host);
  EXPECT_EQ(fs::verifyPattern(p, bytes, 5, MemoryKind::host), bytes);
  fs::corruptOneByte(p, bytes, MemoryKind::host);
  EXPECT_EQ(fs::verifyPattern(p, bytes, 5, MemoryKind::host), bytes / 2);
  fs::zeroBuffer(p, bytes, MemoryKind::host);
  EXPECT_EQ(fs::verifyPattern(p, bytes, 5, MemoryKind::host), 0u);
}

#if !FABSCOPE_HAVE_CUDA
TEST(MemoryKinds, DeviceMemoryWithoutCudaIsAUsageError) {
  fs::BufferArena arena;
  EXPECT_THROW(arena.allocate(16, MemoryKind::cuda), fabscope::UsageError);
  EXPECT_THROW(arena.allocate(16, MemoryKind::cudaHost), fabscope::UsageError);
}
#endif
