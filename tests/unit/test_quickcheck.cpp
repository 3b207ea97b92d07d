// fabscope quickcheck: the checks on built inventories and counter snapshots,
// the state directory's refusals, the loop's result line and
// the command line's typed options.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "quickcheck/Quickcheck.hpp"
#include "runtime/Errors.hpp"

using namespace fabscope::quickcheck;
namespace inv = fabscope::inventory;
namespace fs = std::filesystem;

namespace {

inv::FabricIntent fabric(const std::string& protocol, std::optional<double> rateGbps = std::nullopt) {
  inv::FabricIntent f;
  f.protocol = protocol;
  f.rateGbps = rateGbps;
  return f;
}

inv::ManifestRow row(const std::string& component, const std::string& intended, const std::string& discovered,
                     inv::ManifestStatus status, bool mustMatch = true) {
  inv::ManifestRow r;
  r.component = component;
  r.host = "n";
  r.intended = intended;
  r.discovered = discovered;
  r.status = status;
  r.mustMatch = mustMatch;
  return r;
}

inv::GpuNicAffinity near(int gpu, const std::string& nic, const std::string& relation) {
  inv::GpuNicAffinity a;
  a.gpu = gpu;
  a.nic = nic;
  a.relation = relation;
  return a;
}

inv::HostInventory hostWithPort(const std::string& state, double rateGbps) {
  inv::HostInventory host;
  host.hostname = "node1";
  inv::RdmaDevice device;
  device.name = "mlx5_0";
  inv::RdmaPort port;
  port.number = 1;
  port.state = state;
  port.physState = state == "ACTIVE" ? "LinkUp" : "Disabled";
  port.rateGbps = rateGbps;
  device.ports.push_back(port);
  host.rdmaDevices.push_back(device);
  return host;
}

inv::CounterSnapshot snapshot(std::vector<inv::CounterValue> values) { return {std::move(values)}; }

struct TempDir {
  fs::path path;
  TempDir() {
    char name[] = "/tmp/fabscope-quickcheck-test.XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(Quickcheck, RdmaPortDownIsAProblem) {
  QuickcheckOptions o;
  auto r = checkRdmaPorts(hostWithPort("DOWN", 200), o, std::nullopt);
  EXPECT_EQ(r.problem, "RDMA mlx5_0 port 1 is DOWN (Disabled)");
  EXPECT_TRUE(checkRdmaPorts(hostWithPort("ACTIVE", 200), o, std::nullopt).problem.empty());
}

TEST(Quickcheck, RdmaRateBelowExpectedIsAProblem) {
  QuickcheckOptions o;
  o.rdmaRateGbps = 200;
  EXPECT_EQ(checkRdmaPorts(hostWithPort("ACTIVE", 100), o, std::nullopt).problem,
            "RDMA mlx5_0 port 1 runs at 100 Gb/s, expected 200 Gb/s");
  EXPECT_TRUE(checkRdmaPorts(hostWithPort("ACTIVE", 200), o, std::nullopt).problem.empty());
  // The manifest's fabric rate is the default expectation.
  inv::Manifest m;
  m.fabric = fabric("ib", 400);
  EXPECT_NE(checkRdmaPorts(hostWithPort("ACTIVE", 200), QuickcheckOptions{}, m).problem.find("expected 400 Gb/s"),
            std::string::npos);
}

TEST(Quickcheck, NoRdmaIsSaidAndOnlyAProblemWhenExpected) {
  inv::HostInventory bare;
  auto r = checkRdmaPorts(bare, QuickcheckOptions{}, std::nullopt);
  EXPECT_TRUE(r.problem.empty());
  EXPECT_EQ(r.detail, "no RDMA device on this node (none expected)");
  inv::Manifest m;
  m.fabric = fabric("roce");
  EXPECT_EQ(checkRdmaPorts(bare, QuickcheckOptions{}, m).problem,
            "no RDMA device found, but the manifest's fabric is roce");
  QuickcheckOptions required;
  required.requireRdma = true;
  EXPECT_EQ(checkRdmaPorts(bare, required, std::nullopt).problem, "no RDMA device found, but --require-rdma was given");
}

TEST(Quickcheck, GpuFarFromEveryNicIsAProblem) {
  inv::HostInventory host;
  host.gpus.emplace_back();
  host.gpus.back().model = "H200";
  host.affinity.push_back(near(0, "mlx5_0", "SYS"));
  host.affinity.push_back(near(0, "mlx5_1", "SYS"));
  EXPECT_EQ(checkGpuNicAffinity(host, AffinityLimit::node).problem,
            "GPU 0 nearest NIC mlx5_0 is SYS, allowed at worst NODE");
  EXPECT_TRUE(checkGpuNicAffinity(host, AffinityLimit::sys).problem.empty());
  host.affinity[1].relation = "PIX";
  EXPECT_TRUE(checkGpuNicAffinity(host, AffinityLimit::node).problem.empty());
  EXPECT_EQ(checkGpuNicAffinity(inv::HostInventory{}, AffinityLimit::pix).detail, "no GPU on this node");
}

TEST(Quickcheck, ErrorCountersThatMovedAreAProblem) {
  QuickcheckOptions o;
  const auto before = snapshot(
      {{"ib:mlx5_0/1", "symbol_error", 5}, {"ib:mlx5_0/1", "port_xmit_wait", 10}, {"net:eth0", "rx_errors", 7}});
  // First pass: a baseline, nothing judged.
  auto first = checkCounterMovement(std::nullopt, before, o);
  EXPECT_TRUE(first.problem.empty());
  EXPECT_EQ(first.detail, "first pass: baseline of 2 error counters recorded");
  // Congestion back-pressure moving is no error.
  auto congested = snapshot(
      {{"ib:mlx5_0/1", "symbol_error", 5}, {"ib:mlx5_0/1", "port_xmit_wait", 9999}, {"net:eth0", "rx_errors", 7}});
  EXPECT_TRUE(checkCounterMovement(before, congested, o).problem.empty());
  auto errors = snapshot(
      {{"ib:mlx5_0/1", "symbol_error", 8}, {"ib:mlx5_0/1", "port_xmit_wait", 10}, {"net:eth0", "rx_errors", 9}});
  EXPECT_EQ(checkCounterMovement(before, errors, o).problem,
            "error counter ib:mlx5_0/1 symbol_error rose by 3 since the last check (+1 more)");
  o.counterTolerance = 2;
  EXPECT_EQ(checkCounterMovement(before, errors, o).problem,
            "error counter ib:mlx5_0/1 symbol_error rose by 3 since the last check");
  o.ignoreCounters = {"symbol_error"};
  EXPECT_TRUE(checkCounterMovement(before, errors, o).problem.empty());
  // A reset (driver reload) starts a new baseline instead of a huge wrapped delta.
  auto reset = snapshot({{"ib:mlx5_0/1", "symbol_error", 0}, {"net:eth0", "rx_errors", 7}});
  EXPECT_TRUE(checkCounterMovement(before, reset, QuickcheckOptions{}).problem.empty());
  // A 64-bit counter that wrapped past 2^64 (read back as negative) rose by the difference.
  auto nearWrap = snapshot({{"hw:mlx5_0/1", "rx_icrc_encapsulated", -10}});
  auto wrapped = snapshot({{"hw:mlx5_0/1", "rx_icrc_encapsulated", 5}});
  EXPECT_EQ(checkCounterMovement(nearWrap, wrapped, QuickcheckOptions{}).problem,
            "error counter hw:mlx5_0/1 rx_icrc_encapsulated rose by 15 since the last check");
}

TEST(Quickcheck, StateDirIsCreatedPrivateAndRoundTrips) {
  TempDir t;
  const fs::path dir = t.path / "state";
  secureStateDir(dir, ::geteuid());
  struct stat st {};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(loadCounterState(dir, ::geteuid()), std::nullopt);
  const auto values = snapshot({{"ib:mlx5_0/1", "symbol_error", 5}, {"net:eth 0", "rx_errors", -1}});
  saveCounterState(dir, values);
  auto loaded = loadCounterState(dir, ::geteuid());
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->values.size(), 2u);
  EXPECT_EQ(loaded->values[1].source, "net:eth 0");
  EXPECT_EQ(loaded->values[1].value, -1);
  ASSERT_EQ(::lstat((dir / "counters").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(Quickcheck, StateDirRefusesWritableLinkedOrForeign) {
  TempDir t;
  const fs::path open = t.path / "open";
  fs::create_directory(open);
  ::chmod(open.c_str(), 0777);
  EXPECT_THROW(secureStateDir(open, ::geteuid()), fabscope::RuntimeFailure);
  ::chmod(open.c_str(), 0720);
  try {
    secureStateDir(open, ::geteuid());
    FAIL() << "a group-writable state directory was accepted";
  } catch (const fabscope::RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("writable by group or others (mode 0720)"), std::string::npos) << e.what();
  }
  const fs::path real = t.path / "real";
  secureStateDir(real, ::geteuid());
  const fs::path link = t.path / "link";
  fs::create_directory_symlink(real, link);
  try {
    secureStateDir(link, ::geteuid());
    FAIL() << "a symbolic link was accepted as the state directory";
  } catch (const fabscope::RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("is a symbolic link; refused"), std::string::npos) << e.what();
  }
  // Owned by someone else (the owner asked for differs from the directory's).
  try {
    secureStateDir(real, ::geteuid() + 1);
    FAIL() << "a directory of another owner was accepted";
  } catch (const fabscope::RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("is owned by uid"), std::string::npos) << e.what();
  }
  // A state file planted as a symbolic link is refused, not followed.
  std::ofstream(t.path / "elsewhere") << "fabscope-quickcheck-counters 1\n";
  fs::create_symlink(t.path / "elsewhere", real / "counters");
  EXPECT_THROW(loadCounterState(real, ::geteuid()), fabscope::RuntimeFailure);
  // ... and saving replaces the link itself, leaving its target alone.
  saveCounterState(real, snapshot({{"net:eth0", "rx_errors", 1}}));
  EXPECT_FALSE(fs::is_symlink(real / "counters"));
  std::ifstream target(t.path / "elsewhere");
  std::string all((std::istreambuf_iterator<char>(target)), {});
  EXPECT_EQ(all, "fabscope-quickcheck-counters 1\n");
}

TEST(Quickcheck, MalformedStateFileNamesTheLine) {
  TempDir t;
  secureStateDir(t.path / "s", ::geteuid());
  std::ofstream(t.path / "s" / "counters") << "fabscope-quickcheck-counters 1\nib:x\tsymbol_error\t12\nbroken line\n";
  try {
    loadCounterState(t.path / "s", ::geteuid());
    FAIL() << "a malformed state file was read";
  } catch (const fabscope::RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("counters:3: expected SOURCE<tab>NAME<tab>VALUE"), std::string::npos)
        << e.what();
  }
}

TEST(Quickcheck, LoopLineIsParsedAndJudged) {
  EXPECT_EQ(parseLoopLine("noise\n[host] warning\n"), std::nullopt);
  auto f = parseLoopLine("mpirun noise\nquickcheck-loop: latency_us=0.850 bandwidth_GBps=7.250\n");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->latencyUs, 0.85);
  EXPECT_DOUBLE_EQ(f->bandwidthGBps, 7.25);
  LoopSettings s;
  s.maxLatencyUs = 2;
  s.minBandwidthGBps = 1;
  EXPECT_TRUE(judgeLoop(*f, s).problem.empty());
  s.maxLatencyUs = 0.5;
  EXPECT_EQ(judgeLoop(*f, s).problem, "intra-node latency 0.85 us above 0.5 us");
  s.maxLatencyUs = 2;
  s.minBandwidthGBps = 10;
  EXPECT_EQ(judgeLoop(*f, s).problem, "intra-node bandwidth 7.25 GB/s below 10 GB/s");
}

TEST(Quickcheck, ProblemLineIsOneLineNamingTheFirstProblem) {
  std::vector<CheckResult> results = {
      {"inventory", "", "ok"}, {"manifest", "adapter\nfirmware\x1b[1m", "d"}, {"rdma", "second", "d"}};
  EXPECT_EQ(problemLine(results), "fabscope: adapter?firmware?[1m");
  EXPECT_EQ(problemLine({{"inventory", "", "ok"}}), "");
  EXPECT_LE(problemLine({{"x", std::string(1000, 'a'), ""}}).size(), 240u);
}

TEST(Quickcheck, ManifestRowsGiveTheFirstMustMatchDifference) {
  std::vector<inv::ManifestRow> rows;
  rows.push_back(row("fabric/protocol", "ib", "ib", inv::ManifestStatus::match));
  rows.push_back(row("software/ucx", "9.9", "1.13.1", inv::ManifestStatus::mismatch, false));
  EXPECT_TRUE(checkManifestRows(rows, "/etc/m.yaml").problem.empty()) << "an advisory row is no problem";
  rows.push_back(row("fabric/rate_gbps", "400", "no active RDMA port", inv::ManifestStatus::missing));
  EXPECT_EQ(checkManifestRows(rows, "/etc/m.yaml").problem,
            "manifest m.yaml: fabric/rate_gbps is 'no active RDMA port', expected '400'");
}

TEST(Quickcheck, OptionsAreTypedAndBadValuesNamed) {
  QuickcheckOptions o = parseQuickcheckArguments({});
  EXPECT_EQ(o.affinityLimit, AffinityLimit::node);
  EXPECT_DOUBLE_EQ(o.timeLimitSeconds, 45);
  EXPECT_EQ(o.loop.bandwidthBytes, 1 << 20);
  o = parseQuickcheckArguments({"--gpu-nic-affinity", "phb", "--time-limit", "20s", "--loop-bytes", "64KiB",
                                "--ignore-counter", "symbol_error", "--rdma-rate", "200"});
  EXPECT_EQ(o.affinityLimit, AffinityLimit::phb);
  EXPECT_DOUBLE_EQ(o.timeLimitSeconds, 20);
  EXPECT_EQ(o.loop.bandwidthBytes, 65536);
  EXPECT_EQ(o.rdmaRateGbps, 200);
  const auto error = [](std::vector<std::string> args) {
    try {
      parseQuickcheckArguments(args);
    } catch (const fabscope::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error({"--gpu-nic-affinity", "near"}).find("--gpu-nic-affinity: 'near' is not a distance class"),
            std::string::npos);
  EXPECT_NE(error({"--loop-window", "0"}).find("--loop-window: 0 is not allowed"), std::string::npos);
  EXPECT_NE(error({"--time-limit", "soon"}).find("--time-limit:"), std::string::npos);
  EXPECT_NE(error({"--max-latency-us", "fast"}).find("max-latency-us"), std::string::npos);
  EXPECT_NE(error({"--ignore-counter", "rx_bytes"}).find("'rx_bytes' is not one of the error counters"),
            std::string::npos);
  EXPECT_NE(error({"--loop-transport", "carrier-pigeon"}).find("unknown transport 'carrier-pigeon'"),
            std::string::npos);
  EXPECT_NE(error({"--bogus"}).find("bogus"), std::string::npos);
  EXPECT_NE(error({"--slurm-node", "n1"}).find("only mean something with --slurm-drain"), std::string::npos);
  EXPECT_NE(error({"--loop-bytes", "1GiB", "--loop-window", "2"}).find("at most 1GiB in flight"), std::string::npos);
}
