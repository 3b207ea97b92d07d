#pragma once
// The intended fabric (an optional YAML file) and the check of what was
// discovered against it. See docs/inventory.md for the format.
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

// Thrown by loadManifest: the message names file:line:column and what was expected.
class ManifestError : public std::runtime_error {
 public:
  ManifestError(const std::string& file, int line, int column, const std::string& problem);
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_;
  int column_;
};

// How a component's configuration came about, and whether it is binding.
struct Expectation {
  std::string validation = "site-integrated";  // or "vendor-validated"
  bool mustMatch = true;                       // false: advisory
  int line = 0;                                // where it was declared (1-based)
};

struct FabricIntent {
  std::string protocol;  // ib | roce | tcp
  std::optional<double> rateGbps;
  std::optional<int> width;
  std::optional<int> mtu;               // interface MTU of the fabric interfaces
  std::optional<int> rdmaMtu;           // active MTU of the RDMA ports
  std::vector<std::string> interfaces;  // fabric interfaces (names or glob patterns); empty: derived
  Expectation expectation;
};

struct AdapterIntent {
  std::string model;  // board_id or hca_type
  std::optional<std::string> firmware;
  std::optional<std::string> driver;
  std::optional<std::string> driverVersion;
  Expectation expectation;
};

struct SoftwareIntent {
  std::string name;  // mpi, ucx, nccl, cuda_runtime, cuda_driver, nvidia_driver, kernel, os
  std::string version;
  Expectation expectation;
};

// One congestion-control/QoS item, its value in the canonical text the
// inventory prints ("3,4" / "none" for priorities, "26:3,48:6" for a DSCP map).
struct QosItem {
  std::string value;
  Expectation expectation;
};

struct QosIntent {
  std::vector<std::string>
      interfaces;  // names or glob patterns; empty: interfaces of RDMA devices with an Ethernet port
  std::optional<QosItem> pfcPriorities;
  std::optional<QosItem> trust;   // dscp | pcp
  std::optional<QosItem> roceTc;  // 0..255
  std::optional<QosItem> ecnNp;
  std::optional<QosItem> ecnRp;
  std::optional<QosItem> dscpMap;
  std::optional<QosItem> roceMode;  // "RoCE v2" | "IB/RoCE v1"
  std::optional<QosItem> ibSl;      // 0..15
  // InfiniBand ports (smpquery): total weight per VL ("0:32,1:32", sorted by VL,
  // "none"), and the VL of SL 0..15 ("0,1,...").
  std::optional<QosItem> ibVlArbLow;
  std::optional<QosItem> ibVlArbHigh;
  std::optional<QosItem> ibSl2vl;
  Expectation expectation;  // the section's; an item's own must_match/validation override it
};

struct Manifest {
  std::string file;
  std::string name;
  std::optional<FabricIntent> fabric;
  std::vector<AdapterIntent> adapters;
  std::vector<SoftwareIntent> software;
  std::optional<QosIntent> qos;
};

Manifest loadManifest(const std::filesystem::path& path);
// Same, from text already in memory; `file` names it in error messages.
Manifest parseManifest(const std::string& text, const std::string& file);

enum class ManifestStatus { match, mismatch, missing };
std::string statusName(ManifestStatus status);

struct ManifestRow {
  std::string component;  // "fabric/protocol", "fabric/rate_gbps", "adapter/MT_0000000223/firmware", "software/ucx"
  std::string host;
  std::string intended;
  std::string discovered;
  ManifestStatus status = ManifestStatus::missing;
  bool mustMatch = true;
  std::string validation;  // vendor-validated | site-integrated
};

std::vector<ManifestRow> checkManifest(const Manifest& manifest, const std::vector<HostInventory>& hosts);

// True when a must-match row is not a match (the run's exit code becomes 1).
bool manifestFailed(const std::vector<ManifestRow>& rows);

// Whether a discovered version satisfies an intended one: equal, or the
// intended text appears in the discovered text as a whole version ("4.1.4"
// in "Open MPI v4.1.4, package: ..."), where "2.28" also covers "2.28.3".
bool versionMatches(const std::string& intended, const std::string& discovered);

}  // namespace fabscope::inventory
