#include "runtime/MemoryUse.hpp"

#include <malloc.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace fabscope::runtime {
namespace {

std::int64_t heapPeak = 0;
const char* heapPeakWhere = "start";
std::int64_t writeNanoseconds = 0;
std::int64_t clockSyncNanoseconds = 0;

// "Name:   1234 kB" -> bytes, or -1 when the line is not `name`.
std::int64_t kilobytesOf(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line.substr(0, name.size()) != name || line[name.size()] != ':') return -1;
  std::int64_t kb = 0;
  bool digits = false;
  for (char c : line.substr(name.size() + 1)) {
    if (c >= '0' && c <= '9') {
      kb = kb * 10 + (c - '0');
      digits = true;
    } else if (digits) {
      break;
    }
  }
  return digits ? kb * 1024 : -1;
}

double megabytes(std::int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

}  // namespace

MemoryUse parseProcStatus(std::string_view statusText) {
  MemoryUse use;
  while (!statusText.empty()) {
    const auto end = statusText.find('\n');
    const auto line = statusText.substr(0, end);
    statusText = end == std::string_view::npos ? std::string_view{} : statusText.substr(end + 1);
    for (auto [name, field] : {std::pair{std::string_view("RssAnon"), &MemoryUse::rssAnonBytes},
                               {std::string_view("RssShmem"), &MemoryUse::rssShmemBytes},
                               {std::string_view("RssFile"), &MemoryUse::rssFileBytes},
                               {std::string_view("VmHWM"), &MemoryUse::vmHwmBytes}})
      if (const auto bytes = kilobytesOf(line, name); bytes >= 0) use.*field = bytes;
  }
  return use;
}

MemoryUse currentMemoryUse() {
  std::ifstream in("/proc/self/status");
  std::stringstream text;
  text << in.rdbuf();
  return parseProcStatus(text.str());
}

void sampleHeapPeak(const char* where) {
  const auto now = currentMemoryUse().rssAnonBytes;
  if (now <= heapPeak) return;
  heapPeak = now;
  heapPeakWhere = where;
}

std::int64_t heapPeakBytes() { return heapPeak; }

void returnFreedMemory() { (void)malloc_trim(0); }

void addWriteNanoseconds(std::int64_t nanoseconds) { writeNanoseconds += nanoseconds; }

void addClockSyncNanoseconds(std::int64_t nanoseconds) { clockSyncNanoseconds += nanoseconds; }

void reportMemoryIfAsked(int rank) {
  const char* asked = std::getenv("FABSCOPE_REPORT_MEMORY");
  if (!asked || std::string(asked) != "1") return;
  sampleHeapPeak("end of run");
  const auto now = currentMemoryUse();
  std::fprintf(stderr,
               "fabscope: memory: rank %d heap_peak_mb=%.1f rss_shmem_mb=%.1f vm_hwm_mb=%.1f write_s=%.3f "
               "clock_sync_s=%.3f peak_at=%s\n",
               rank, megabytes(heapPeak), megabytes(now.rssShmemBytes), megabytes(now.vmHwmBytes),
               static_cast<double>(writeNanoseconds) / 1e9, static_cast<double>(clockSyncNanoseconds) / 1e9,
               heapPeakWhere);
  std::fflush(stderr);
}

}  // namespace fabscope::runtime
