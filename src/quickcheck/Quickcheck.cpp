#include "quickcheck/Quickcheck.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "inventory/JsonWriter.hpp"
#include "inventory/PciAffinity.hpp"
#include "runtime/Errors.hpp"
#include "runtime/Mpi.hpp"

namespace fabscope::quickcheck {
namespace inv = fabscope::inventory;
namespace fs = std::filesystem;

namespace {

const char* const limitNames[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};

std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string errnoText(int error) { return std::strerror(error); }

constexpr const char* stateHeader = "fabscope-quickcheck-counters 1";
constexpr const char* stateFileName = "counters";

}  // namespace

std::string affinityLimitName(AffinityLimit limit) { return limitNames[static_cast<int>(limit)]; }

AffinityLimit parseAffinityLimit(const std::string& text) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (int i = 0; i < 5; ++i)
    if (upper == limitNames[i]) return static_cast<AffinityLimit>(i);
  throw UsageError("--gpu-nic-affinity: '" + text + "' is not a distance class; expected PIX, PXB, PHB, NODE or SYS");
}

// --- checks ----------------------------------------------------------------------

CheckResult checkManifestRows(const std::vector<inv::ManifestRow>& rows, const std::string& manifestFile) {
  CheckResult r;
  r.name = "manifest";
  int mismatches = 0;
  for (const auto& row : rows) {
    if (row.status == inv::ManifestStatus::match) continue;
    if (!row.mustMatch) continue;
    ++mismatches;
    if (r.problem.empty())
      r.problem = "manifest " + fs::path(manifestFile).filename().string() + ": " + row.component + " is '" +
                  row.discovered + "', expected '" + row.intended + "'";
  }
  if (mismatches > 1) r.problem += " (+" + std::to_string(mismatches - 1) + " more)";
  r.detail = std::to_string(rows.size()) + " manifest rows, " + std::to_string(mismatches) + " must-match differences";
  return r;
}

CheckResult checkRdmaPorts(const inv::HostInventory& host, const QuickcheckOptions& options,
                           const std::optional<inv::Manifest>& manifest) {
  CheckResult r;
  r.name = "rdma";
  bool required = options.requireRdma;
  std::optional<double> rate = options.rdmaRateGbps;
  if (manifest && manifest->fabric) {
    const auto& fabric = *manifest->fabric;
    if (fabric.protocol == "ib" || fabric.protocol == "roce") required = true;
    if (!rate && fabric.rateGbps && fabric.protocol != "tcp") rate = fabric.rateGbps;
  }
  int ports = 0;
  for (const auto& device : host.rdmaDevices) {
    for (const auto& port : device.ports) {
      ++ports;
      const std::string where = device.name + " port " + std::to_string(port.number);
      if (r.problem.empty() && port.state != "ACTIVE")
        r.problem = "RDMA " + where + " is " + (port.state.empty() ? "in an unknown state" : port.state) +
                    (port.physState.empty() ? "" : " (" + port.physState + ")");
      if (r.problem.empty() && rate && port.rateGbps + 1e-9 < *rate)
        r.problem = "RDMA " + where + " runs at " + formatNumber(port.rateGbps) + " Gb/s, expected " +
                    formatNumber(*rate) + " Gb/s";
    }
  }
  if (ports == 0) {
    r.detail = "no RDMA device on this node";
    if (required)
      r.problem = "no RDMA device found, but " +
                  std::string(options.requireRdma ? "--require-rdma was given"
                                                  : "the manifest's fabric is " + manifest->fabric->protocol);
    else
      r.detail += " (none expected)";
    return r;
  }
  r.detail = std::to_string(ports) + " RDMA ports" + (rate ? ", expected rate " + formatNumber(*rate) + " Gb/s" : "");
  return r;
}

CheckResult checkGpuNicAffinity(const inv::HostInventory& host, AffinityLimit limit) {
  CheckResult r;
  r.name = "affinity";
  if (host.gpus.empty()) {
    r.detail = "no GPU on this node";
    return r;
  }
  const int worstAllowed = static_cast<int>(limit);
  for (const auto& gpu : host.gpus) {
    std::string nearest;
    int nearestRank = 1 << 20;
    std::string nearestNic;
    for (const auto& a : host.affinity) {
      if (a.gpu != gpu.index) continue;
      const int rank = inv::relationRank(a.relation);
      if (rank < nearestRank) nearestRank = rank, nearest = a.relation, nearestNic = a.nic;
    }
    if (nearestNic.empty()) {
      // A GPU node without a NIC on PCI (a workstation) has nothing to place.
      r.detail = "GPUs present, no PCI NIC to relate them to";
      continue;
    }
    if (nearest.empty()) {
      if (r.problem.empty()) r.problem = "GPU " + std::to_string(gpu.index) + ": distance to any NIC cannot be told";
    } else if (nearestRank > worstAllowed && r.problem.empty()) {
      r.problem = "GPU " + std::to_string(gpu.index) + " nearest NIC " + nearestNic + " is " + nearest +
                  ", allowed at worst " + affinityLimitName(limit);
    }
  }
  if (r.detail.empty())
    r.detail =
        std::to_string(host.gpus.size()) + " GPUs, nearest NIC at worst " + affinityLimitName(limit) + " allowed";
  return r;
}

bool isErrorCounter(const std::string& name) {
  static const char* const names[] = {
      // InfiniBand/RoCE port counters
      "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_rcv_remote_physical_errors",
      "port_rcv_switch_relay_errors", "port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
      "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped", "rx_icrc_encapsulated",
      // interface statistics
      "rx_errors", "tx_errors", "rx_crc_errors", "rx_frame_errors", "rx_length_errors", "rx_over_errors",
      "rx_fifo_errors", "tx_fifo_errors", "tx_carrier_errors", "tx_aborted_errors"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

CheckResult checkCounterMovement(const std::optional<inv::CounterSnapshot>& previous, const inv::CounterSnapshot& now,
                                 const QuickcheckOptions& options) {
  CheckResult r;
  r.name = "counters";
  int judged = 0;
  for (const auto& v : now.values)
    if (isErrorCounter(v.name)) ++judged;
  if (!previous) {
    r.detail = "first pass: baseline of " + std::to_string(judged) + " error counters recorded";
    return r;
  }
  int moved = 0;
  for (const auto& d : inv::diff(*previous, now)) {
    if (!isErrorCounter(d.name)) continue;
    bool ignored = false;
    for (const auto& n : options.ignoreCounters) ignored = ignored || n == d.name;
    if (ignored) continue;
    // diff() takes deltas modulo 2^64, so a 64-bit counter that wrapped still rose by a
    // small positive amount; a negative delta means the counter was reset (driver
    // reload, reboot) and its new value is the baseline.
    if (d.delta <= options.counterTolerance) continue;
    ++moved;
    if (r.problem.empty())
      r.problem =
          "error counter " + d.source + " " + d.name + " rose by " + std::to_string(d.delta) + " since the last check";
  }
  if (moved > 1) r.problem += " (+" + std::to_string(moved - 1) + " more)";
  r.detail =
      std::to_string(judged) + " error counters compared with the last pass, " + std::to_string(moved) + " moved";
  return r;
}

// --- state directory ---------------------------------------------------------------

fs::path defaultStateDir() {
  const uid_t uid = geteuid();
  if (uid == 0) return "/run/fabscope-quickcheck";
  if (const char* runtimeDir = std::getenv("XDG_RUNTIME_DIR"); runtimeDir && *runtimeDir)
    return fs::path(runtimeDir) / "fabscope-quickcheck";
  return "/tmp/fabscope-quickcheck-" + std::to_string(uid);
}

void secureStateDir(const fs::path& dir, uid_t owner) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw RuntimeFailure("state directory " + dir.string() + " cannot be created: " + errnoText(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw RuntimeFailure("state directory " + dir.string() + ": " + errnoText(errno));
  if (S_ISLNK(st.st_mode)) throw RuntimeFailure("state directory " + dir.string() + " is a symbolic link; refused");
  if (!S_ISDIR(st.st_mode)) throw RuntimeFailure("state directory " + dir.string() + " is not a directory; refused");
  if (st.st_uid != owner)
    throw RuntimeFailure("state directory " + dir.string() + " is owned by uid " + std::to_string(st.st_uid) +
                         ", not " + std::to_string(owner) + "; refused");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw RuntimeFailure("state directory " + dir.string() + " is writable by group or others (mode " + [&] {
      char m[8];
      std::snprintf(m, sizeof m, "%04o", st.st_mode & 07777);
      return std::string(m);
    }() + "); refused");
}

std::optional<inv::CounterSnapshot> loadCounterState(const fs::path& dir, uid_t owner) {
  const fs::path file = dir / stateFileName;
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) throw RuntimeFailure("state file " + file.string() + " is a symbolic link; refused");
    throw RuntimeFailure("state file " + file.string() + ": " + errnoText(errno));
  }
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != owner) {
    ::close(fd);
    throw RuntimeFailure("state file " + file.string() + " is not a regular file of uid " + std::to_string(owner) +
                         "; refused");
  }
  char buffer[65536];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > (std::size_t{16} << 20)) break;
  }
  ::close(fd);
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || line != stateHeader)
    throw RuntimeFailure("state file " + file.string() + ":1: expected '" + stateHeader +
                         "'; remove the file to start a new baseline");
  inv::CounterSnapshot snapshot;
  for (int number = 2; std::getline(lines, line); ++number) {
    const auto tab1 = line.find('\t');
    const auto tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    std::int64_t value = 0;
    const char* first = tab2 == std::string::npos ? nullptr : line.data() + tab2 + 1;
    auto parsed = first ? std::from_chars(first, line.data() + line.size(), value) : std::from_chars_result{};
    if (!first || parsed.ec != std::errc() || parsed.ptr != line.data() + line.size())
      throw RuntimeFailure("state file " + file.string() + ":" + std::to_string(number) +
                           ": expected SOURCE<tab>NAME<tab>VALUE; remove the file to start a new baseline");
    snapshot.values.push_back({line.substr(0, tab1), line.substr(tab1 + 1, tab2 - tab1 - 1), value});
  }
  return snapshot;
}

void replaceFile(const fs::path& file, const std::string& text) {
  const fs::path temporary = file.parent_path() / ("." + file.filename().string() + "." + std::to_string(::getpid()));
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw RuntimeFailure(temporary.string() + " cannot be created: " + errnoText(errno));
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      throw RuntimeFailure(temporary.string() + ": " + errnoText(error));
    }
    written += static_cast<std::size_t>(n);
  }
  ::close(fd);
  // rename replaces a link planted at the final name itself, never what it points to.
  if (::rename(temporary.c_str(), file.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    throw RuntimeFailure(file.string() + ": " + errnoText(error));
  }
}

void saveCounterState(const fs::path& dir, const inv::CounterSnapshot& snapshot) {
  std::string text = std::string(stateHeader) + "\n";
  for (const auto& v : snapshot.values) text += v.source + "\t" + v.name + "\t" + std::to_string(v.value) + "\n";
  replaceFile(dir / stateFileName, text);
}

// --- loop figures --------------------------------------------------------------------

std::optional<LoopFigures> parseLoopLine(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    LoopFigures f;
    if (std::sscanf(line.c_str(), "quickcheck-loop: latency_us=%lf bandwidth_GBps=%lf", &f.latencyUs,
                    &f.bandwidthGBps) == 2)
      return f;
  }
  return std::nullopt;
}

CheckResult judgeLoop(const LoopFigures& f, const LoopSettings& s) {
  CheckResult r;
  r.name = "loop";
  r.detail = "intra-node " + s.transport + ": latency " + formatNumber(f.latencyUs) + " us (max " +
             formatNumber(s.maxLatencyUs) + "), bandwidth " + formatNumber(f.bandwidthGBps) + " GB/s (min " +
             formatNumber(s.minBandwidthGBps) + ")";
  if (f.latencyUs > s.maxLatencyUs)
    r.problem = "intra-node latency " + formatNumber(f.latencyUs) + " us above " + formatNumber(s.maxLatencyUs) + " us";
  else if (f.bandwidthGBps < s.minBandwidthGBps)
    r.problem = "intra-node bandwidth " + formatNumber(f.bandwidthGBps) + " GB/s below " +
                formatNumber(s.minBandwidthGBps) + " GB/s";
  return r;
}

std::string problemLine(const std::vector<CheckResult>& results) {
  for (const auto& r : results) {
    if (r.problem.empty()) continue;
    // One printable line, short enough for a Slurm reason.
    std::string line = "fabscope: " + r.problem;
    for (char& c : line)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) c = '?';
    if (line.size() > 240) line = line.substr(0, 237) + "...";
    return line;
  }
  return "";
}

}  // namespace fabscope::quickcheck
