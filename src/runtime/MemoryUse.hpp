#pragma once
// This process's memory as the kernel counts it, split so that MPI's shared
// memory (Open MPI's vader/sm segments, mapped by every rank of a host and
// growing with the ranks of the host) is not taken for fabscope's own heap.
// Used by FABSCOPE_REPORT_MEMORY=1 (docs/scale.md) and the scale test.
#include <cstdint>
#include <string_view>

namespace fabscope::runtime {

struct MemoryUse {
  std::int64_t rssAnonBytes = 0;   // private anonymous pages: heap, stacks, private mappings
  std::int64_t rssShmemBytes = 0;  // shared memory mapped and touched (MPI's segments)
  std::int64_t rssFileBytes = 0;   // file-backed pages (the program and its libraries)
  std::int64_t vmHwmBytes = 0;     // peak resident set, all three together
};

// The RssAnon, RssShmem, RssFile and VmHWM lines of /proc/<pid>/status text;
// a line that is absent stays 0.
MemoryUse parseProcStatus(std::string_view statusText);

// /proc/self/status now (zeros where it cannot be read).
MemoryUse currentMemoryUse();

// Samples RssAnon and keeps the largest seen: called at the points where a
// rank holds the most (after an instance's reduction and its write), never
// inside a timed loop (it reads a /proc file).
// `where` names the point, kept with the largest sample for the report.
void sampleHeapPeak(const char* where);
std::int64_t heapPeakBytes();

// Hands freed heap back to the system (malloc_trim): between test instances,
// never inside a timed loop.
void returnFreedMemory();

// Time this rank spent writing test instances to the result file (collective
// writes: every rank waits for the slowest), summed for the report below.
void addWriteNanoseconds(std::int64_t nanoseconds);

// Time this rank spent in clock synchronisation (a tree, not serial in N).
void addClockSyncNanoseconds(std::int64_t nanoseconds);

// When FABSCOPE_REPORT_MEMORY=1: one line on stderr for this rank, "fabscope:
// memory: rank R heap_peak_mb=... rss_shmem_mb=... vm_hwm_mb=... write_s=... clock_sync_s=... peak_at=WHERE".
void reportMemoryIfAsked(int rank);

}  // namespace fabscope::runtime
