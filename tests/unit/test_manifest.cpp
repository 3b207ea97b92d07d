// Manifest: strict loading (errors with file:line:column) and checking of
// discovered against intended.
#include <gtest/gtest.h>

#include <algorithm>

#include "inventory/HostInventory.hpp"
#include "inventory/Manifest.hpp"

using namespace fabscope::inventory;

namespace {

const std::string kManifests = std::string(FABSCOPE_TEST_DATA_DIR) + "/manifests/";

// Loads a bad manifest and returns the error, failing the test when it loads.
ManifestError loadError(const std::string& name) {
  try {
    loadManifest(kManifests + name);
  } catch (const ManifestError& e) {
    return e;
  }
  ADD_FAILURE() << name << " loaded without an error";
  return ManifestError(name, 0, 0, "no error");
}

HostInventory fixtureHost(const std::string& name) {
  InventoryOptions options;
  options.sysRoot = std::string(FABSCOPE_TEST_DATA_DIR) + "/sysfs/host-a";
  options.hostname = name;
  options.useVerbs = options.useHwloc = options.useCuda = false;
  return collectHostInventory(options);
}

const ManifestRow& row(const std::vector<ManifestRow>& rows, const std::string& host, const std::string& component) {
  auto it = std::find_if(rows.begin(), rows.end(),
                         [&](const ManifestRow& r) { return r.host == host && r.component == component; });
  if (it == rows.end()) throw std::runtime_error("no row " + host + " " + component);
  return *it;
}

}  // namespace

TEST(Manifest, LoadsGoodFile) {
  Manifest manifest = loadManifest(kManifests + "roce-rack.yaml");
  EXPECT_EQ(manifest.name, "rack-a-roce");
  ASSERT_TRUE(manifest.fabric);
  EXPECT_EQ(manifest.fabric->protocol, "roce");
  EXPECT_DOUBLE_EQ(*manifest.fabric->rateGbps, 100.0);
  EXPECT_EQ(*manifest.fabric->mtu, 9000);
  EXPECT_EQ(manifest.fabric->interfaces, std::vector<std::string>{"ens1f0"});
  EXPECT_EQ(manifest.fabric->expectation.validation, "vendor-validated");
  ASSERT_EQ(manifest.adapters.size(), 2u);
  EXPECT_EQ(manifest.adapters[0].model, "MT_0000000359");
  EXPECT_TRUE(manifest.adapters[0].expectation.mustMatch) << "must_match defaults to true";
  EXPECT_FALSE(manifest.adapters[1].expectation.mustMatch);
  EXPECT_EQ(manifest.adapters[1].expectation.validation, "site-integrated");
  ASSERT_EQ(manifest.software.size(), 3u);
  EXPECT_EQ(manifest.software[0].name, "ucx");
  EXPECT_EQ(manifest.software[0].version, "1.13");
  EXPECT_FALSE(manifest.software[1].expectation.mustMatch);
}

TEST(Manifest, UnknownKeyNamesLineColumnAndChoices) {
  ManifestError e = loadError("unknown-key.yaml");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.column(), 3);
  const std::string message = e.what();
  EXPECT_NE(message.find("unknown-key.yaml:4:3"), std::string::npos) << message;
  EXPECT_NE(message.find("'rate_gpbs'"), std::string::npos) << message;
  EXPECT_NE(message.find("rate_gbps"), std::string::npos) << "the valid keys are listed: " << message;
}

TEST(Manifest, WrongTypeNamesTheLine) {
  ManifestError e = loadError("wrong-type.yaml");
  EXPECT_EQ(e.line(), 7);
  EXPECT_NE(std::string(e.what()).find("must be true or false"), std::string::npos) << e.what();
}

TEST(Manifest, BadProtocol) {
  ManifestError e = loadError("bad-protocol.yaml");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(std::string(e.what()).find("ib, roce or tcp"), std::string::npos) << e.what();
}

TEST(Manifest, UnknownSoftware) {
  ManifestError e = loadError("bad-software.yaml");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(std::string(e.what()).find("'openmpi'"), std::string::npos) << e.what();
}

TEST(Manifest, SyntaxErrorHasPosition) {
  ManifestError e = loadError("syntax-error.yaml");
  EXPECT_GE(e.line(), 3);
  EXPECT_NE(std::string(e.what()).find("YAML syntax error"), std::string::npos) << e.what();
}

TEST(Manifest, RateMustBeANumber) {
  ManifestError e = loadError("rate-not-number.yaml");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 14);
  EXPECT_NE(std::string(e.what()).find("positive number"), std::string::npos) << e.what();
}

TEST(Manifest, MissingFileIsAnError) { EXPECT_THROW(loadManifest(kManifests + "no-such-file.yaml"), ManifestError); }

TEST(Manifest, VersionMatching) {
  EXPECT_TRUE(versionMatches("4.1.4", "Open MPI v4.1.4, package: Debian OpenMPI"));
  EXPECT_TRUE(versionMatches("2.28", "2.28.3"));
  EXPECT_TRUE(versionMatches("1.13.1", "1.13.1"));
  EXPECT_FALSE(versionMatches("4.1", "14.1.0"));
  EXPECT_FALSE(versionMatches("1.13", "1.131"));
  EXPECT_FALSE(versionMatches("2.28.3", "2.28"));
  EXPECT_FALSE(versionMatches("1.16", ""));
}

TEST(Manifest, ChecksDiscoveredAgainstIntended) {
  Manifest manifest = loadManifest(kManifests + "roce-rack.yaml");
  std::vector<HostInventory> hosts{fixtureHost("node1"), fixtureHost("node2")};
  hosts[0].versions.ucx = "1.13.1";
  hosts[1].versions.ucx = "1.16.0";
  hosts[0].versions.os = hosts[1].versions.os = "Debian GNU/Linux 12 (bookworm)";
  hosts[0].versions.nccl = hosts[1].versions.nccl = "";  // as in a build without NCCL
  // node2: RoCE port firmware differs and the interface MTU was left at 1500.
  for (auto& d : hosts[1].rdmaDevices)
    if (d.name == "mlx5_1") d.firmware = "22.35.2000";
  for (auto& n : hosts[1].interfaces)
    if (n.name == "ens1f0") n.mtu = 1500;

  auto rows = checkManifest(manifest, hosts);
  // The fixture has both an IB and a RoCE port: a roce fabric finds "ib+roce".
  EXPECT_EQ(row(rows, "node1", "fabric/protocol").discovered, "ib+roce");
  EXPECT_EQ(row(rows, "node1", "fabric/protocol").status, ManifestStatus::mismatch);
  EXPECT_EQ(row(rows, "node1", "fabric/rate_gbps@mlx5_1/1").status, ManifestStatus::match);
  EXPECT_EQ(row(rows, "node1", "fabric/rate_gbps@mlx5_0/1").discovered, "200");
  EXPECT_EQ(row(rows, "node1", "fabric/mtu@ens1f0").status, ManifestStatus::match);
  const ManifestRow& mtu = row(rows, "node2", "fabric/mtu@ens1f0");
  EXPECT_EQ(mtu.status, ManifestStatus::mismatch);
  EXPECT_EQ(mtu.intended, "9000");
  EXPECT_EQ(mtu.discovered, "1500");
  EXPECT_TRUE(mtu.mustMatch);
  EXPECT_EQ(mtu.validation, "vendor-validated");

  EXPECT_EQ(row(rows, "node1", "adapter/MT_0000000359@mlx5_1/firmware").status, ManifestStatus::match);
  EXPECT_EQ(row(rows, "node2", "adapter/MT_0000000359@mlx5_1/firmware").status, ManifestStatus::mismatch);
  EXPECT_EQ(row(rows, "node1", "adapter/MT_0000000359@mlx5_1/driver").discovered, "mlx5_core");
  EXPECT_EQ(row(rows, "node1", "adapter/MT_0000000359@mlx5_1/driver_version").status, ManifestStatus::match);

  EXPECT_EQ(row(rows, "node1", "software/ucx").status, ManifestStatus::match);
  EXPECT_EQ(row(rows, "node2", "software/ucx").status, ManifestStatus::mismatch);
  const ManifestRow& nccl = row(rows, "node1", "software/nccl");
  EXPECT_EQ(nccl.status, ManifestStatus::missing);
  EXPECT_FALSE(nccl.mustMatch);
  EXPECT_EQ(row(rows, "node1", "software/os").status, ManifestStatus::match);
  EXPECT_TRUE(manifestFailed(rows));
}

TEST(Manifest, AdvisoryMismatchDoesNotFail) {
  Manifest manifest = parseManifest("software:\n  ucx: {version: '9.9', must_match: false}\n", "inline.yaml");
  std::vector<HostInventory> hosts{fixtureHost("node1")};
  hosts[0].versions.ucx = "1.13.1";
  auto rows = checkManifest(manifest, hosts);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, ManifestStatus::mismatch);
  EXPECT_FALSE(manifestFailed(rows));
}

TEST(Manifest, MissingAdapterIsReported) {
  Manifest manifest = parseManifest("adapters:\n  - model: MT_9999\n    firmware: 1.0\n", "inline.yaml");
  std::vector<HostInventory> hosts{fixtureHost("node1")};
  auto rows = checkManifest(manifest, hosts);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].component, "adapter/MT_9999");
  EXPECT_EQ(rows[0].status, ManifestStatus::missing);
  EXPECT_TRUE(manifestFailed(rows));
}
