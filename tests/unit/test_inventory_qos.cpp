// Congestion-control/QoS collection and checks:
// - recorded rtnetlink DCB replies (tests/data/netlink/*.hex, built from
//   linux/dcbnl.h's documented layout; the README lines at the top of each file
//   say how) parsed by the pure parser, plus malformed variants;
// - mlx5's ECN sysfs, the rdma_cm configfs RoCE mode/ToS, MLNX_OFED's
//   tc/<port>/traffic_class and IB sm_sl/cap_mask in tests/data/sysfs/host-a;
// - consistency flags and the manifest's qos section over those inventories;
// - this machine's own interfaces through the real kernel (no DCB here).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "inventory/Consistency.hpp"
#include "inventory/HostInventory.hpp"
#include "inventory/InventoryFormat.hpp"
#include "inventory/InventoryWire.hpp"
#include "inventory/Manifest.hpp"
#include "inventory/Qos.hpp"
#include "inventory/QosCollect.hpp"

using namespace fabscope::inventory;

namespace {

const std::string kData = FABSCOPE_TEST_DATA_DIR;

// Bytes of a .hex file: hex pairs separated by white space, '#' starts a comment.
std::vector<std::uint8_t> readHex(const std::string& name) {
  std::ifstream in(kData + "/netlink/" + name);
  if (!in) throw std::runtime_error("cannot open " + name);
  std::vector<std::uint8_t> bytes;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string word;
    while (words >> word) bytes.push_back(static_cast<std::uint8_t>(std::stoul(word, nullptr, 16)));
  }
  return bytes;
}

DcbState parse(const std::vector<std::uint8_t>& bytes) { return parseDcbIeeeReply(bytes.data(), bytes.size()); }

// DCB answers as the kernel would give them for host-a: the recorded mlx5 reply
// for the RoCE interface, EOPNOTSUPP for everything else.
InventoryOptions fixtureOptions(const std::string& host) {
  InventoryOptions options;
  options.sysRoot = kData + "/sysfs/host-a";
  options.hostname = host;
  options.useVerbs = options.useHwloc = options.useCuda = false;
  options.useVendorTools = false;
  options.environment = {"NCCL_IB_TC=106", "UCX_IB_TRAFFIC_CLASS=106", "NCCL_IB_SL=0"};
  options.dcbQuery = [](const std::string& ifname) {
    return parse(readHex(ifname == "ens1f0" ? "mlx5-ieee-get.hex" : "eopnotsupp.hex"));
  };
  return options;
}

const NetInterface& interfaceNamed(const HostInventory& inventory, const std::string& name) {
  for (const auto& net : inventory.interfaces)
    if (net.name == name) return net;
  throw std::runtime_error("no interface " + name);
}

NetInterface& interfaceNamed(HostInventory& inventory, const std::string& name) {
  return const_cast<NetInterface&>(interfaceNamed(static_cast<const HostInventory&>(inventory), name));
}

std::string fact(const HostInventory& inventory, const std::string& key) {
  for (const auto& [k, v] : toKeyValues(inventory))
    if (k == key) return v;
  return "(absent)";
}

std::vector<ConsistencyFlag> flagsOn(const std::vector<ConsistencyFlag>& flags, const std::string& component) {
  std::vector<ConsistencyFlag> found;
  for (const auto& f : flags)
    if (f.component == component) found.push_back(f);
  return found;
}

// The error of loading `text` as q.yaml, "(loaded)" when it loads.
std::string manifestError(const std::string& text) {
  try {
    parseManifest(text, "q.yaml");
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "(loaded)";
}

const ManifestRow& row(const std::vector<ManifestRow>& rows, const std::string& component) {
  for (const auto& r : rows)
    if (r.component == component) return r;
  throw std::runtime_error("no manifest row " + component);
}

}  // namespace

TEST(QosNetlink, RequestIsWhatDcbToolSends) {
  const auto request = buildDcbIeeeGetRequest("eth0", 7);
  // nlmsghdr (len 32 with the attribute's padding, as libmnl's mnl_attr_put counts it; RTM_GETDCB 78,
  // NLM_F_REQUEST, seq 7) + dcbmsg (AF_UNSPEC, DCB_CMD_IEEE_GET 21) + DCB_ATTR_IFNAME "eth0\0" (length 9, padded to
  // 12).
  const std::vector<std::uint8_t> expected = {32, 0,  0, 0, 78, 0, 1, 0, 7,   0,   0,   0,   0, 0, 0, 0,
                                              0,  21, 0, 0, 9,  0, 1, 0, 'e', 't', 'h', '0', 0, 0, 0, 0};
  EXPECT_EQ(request, expected);
}

TEST(QosNetlink, ParsesRecordedMlx5Reply) {
  const DcbState dcb = parse(readHex("mlx5-ieee-get.hex"));
  ASSERT_EQ(dcb.status, "configured") << dcb.detail;
  EXPECT_EQ(dcb.dcbx, 0x09);
  EXPECT_EQ(dcbxName(dcb.dcbx), "host,ieee");
  ASSERT_TRUE(dcb.hasPfc);
  EXPECT_EQ(priorityList(dcb.pfcEnabledMask), "3");
  EXPECT_EQ(dcb.pfcCap, 8);
  ASSERT_TRUE(dcb.hasEts);
  EXPECT_EQ(dcb.etsCap, 8);
  EXPECT_EQ(dcb.prioTc, (std::array<int, 8>{0, 0, 0, 3, 0, 0, 0, 0}));
  EXPECT_EQ(dcb.tcTxBw, (std::array<int, 8>{50, 0, 0, 50, 0, 0, 0, 0}));
  EXPECT_EQ(tsaName(dcb.tcTsa[3]), "ets");
  EXPECT_EQ(tsaName(dcb.tcTsa[1]), "strict");
  EXPECT_EQ(dscpMap(dcb), "26:3,48:6");
  EXPECT_EQ(pcpMap(dcb), "none");
  EXPECT_FALSE(dcb.hasTrust);
  ASSERT_TRUE(dcb.hasBuffer);
  EXPECT_EQ(dcb.prioBuffer[3], 1);
  EXPECT_EQ(dcb.bufferSize[0], 130944);
  EXPECT_EQ(dcb.bufferTotal, 262144);
}

TEST(QosNetlink, EopnotsuppMeansNotConfigured) {
  const DcbState dcb = parse(readHex("eopnotsupp.hex"));
  EXPECT_EQ(dcb.status, "not configured");
  EXPECT_NE(dcb.detail.find("no DCB support"), std::string::npos) << dcb.detail;
}

TEST(QosNetlink, OtherErrorsAreUnknownWithTheReason) {
  auto bytes = readHex("eopnotsupp.hex");
  const int enodev = -19;
  std::memcpy(bytes.data() + 16, &enodev, sizeof enodev);
  const DcbState dcb = parse(bytes);
  EXPECT_EQ(dcb.status, "unknown");
  EXPECT_NE(dcb.detail.find("No such device"), std::string::npos) << dcb.detail;
}

TEST(QosNetlink, MalformedRepliesAreUnknownNeverGuessed) {
  const auto good = readHex("mlx5-ieee-get.hex");
  // Cut inside the nested IEEE attribute: the outer length now exceeds the bytes.
  auto truncated = good;
  truncated.resize(100);
  EXPECT_EQ(parse(truncated).status, "unknown");
  EXPECT_NE(parse(truncated).detail.find("does not fit"), std::string::npos) << parse(truncated).detail;
  // Fix the netlink length so the attribute walk itself finds the bad length.
  std::uint32_t length = 100;
  std::memcpy(truncated.data(), &length, sizeof length);
  const DcbState walked = parse(truncated);
  EXPECT_EQ(walked.status, "unknown");
  EXPECT_NE(walked.detail.find("attribute at byte"), std::string::npos) << walked.detail;
  // A PFC attribute shorter than struct ieee_pfc's head.
  auto shortPfc = good;
  const std::size_t pfcAt = 16 + 4 + 16 + 4 + 64;  // header, dcbmsg, IFNAME, IEEE header, ETS
  ASSERT_EQ(shortPfc[pfcAt + 2], 2);               // DCB_ATTR_IEEE_PFC
  shortPfc[pfcAt] = 6;
  shortPfc[pfcAt + 1] = 0;
  EXPECT_EQ(parse(shortPfc).status, "unknown");
  EXPECT_NE(parse(shortPfc).detail.find("DCB_ATTR_IEEE_PFC at byte"), std::string::npos) << parse(shortPfc).detail;
  // A reply for a different command.
  auto otherCommand = good;
  otherCommand[17] = 22;
  EXPECT_NE(parse(otherCommand).detail.find("expected DCB_CMD_IEEE_GET"), std::string::npos);
  EXPECT_EQ(parse(std::vector<std::uint8_t>(10, 0)).status, "unknown");
}

TEST(QosNetlink, ReadsTheAppTrustTable) {
  // The recorded reply plus DCB_ATTR_DCB_APP_TRUST_TABLE (11) {IEEE_APP dscp(5), DCB_APP pcp(255)},
  // appended inside DCB_ATTR_IEEE (kernel 6.1+, what `dcb apptrust show` reads).
  auto bytes = readHex("mlx5-ieee-get.hex");
  const std::vector<std::uint8_t> trust = {4 + 8 + 8, 0, 11, 0, 5, 0, 1, 0, 5, 0, 0, 0, 5, 0, 2, 0, 255, 0, 0, 0};
  const std::size_t ieeeAt = 16 + 4 + 16;
  std::uint16_t ieeeLength;
  std::memcpy(&ieeeLength, bytes.data() + ieeeAt, 2);
  bytes.insert(bytes.begin() + static_cast<long>(ieeeAt + ieeeLength), trust.begin(), trust.end());
  ieeeLength = static_cast<std::uint16_t>(ieeeLength + trust.size());
  std::memcpy(bytes.data() + ieeeAt, &ieeeLength, 2);
  const std::uint32_t total = static_cast<std::uint32_t>(bytes.size());
  std::memcpy(bytes.data(), &total, 4);
  const DcbState dcb = parse(bytes);
  ASSERT_EQ(dcb.status, "configured") << dcb.detail;
  ASSERT_TRUE(dcb.hasTrust);
  EXPECT_EQ(dcb.trustOrder, (std::vector<int>{5, 255}));
  InterfaceQos qos;
  qos.dcb = dcb;
  deriveTrust("ice", qos);
  EXPECT_EQ(qos.trust, "dscp,pcp");
  EXPECT_EQ(qos.trustSource, "dcb apptrust");
}

TEST(QosSysfs, SmallParsers) {
  EXPECT_EQ(parseTrafficClass("Global tclass=106"), 106);
  EXPECT_EQ(parseTrafficClass("106\n"), 106);
  EXPECT_EQ(parseTrafficClass("tclass=96,dscp=26"), 96);
  EXPECT_EQ(parseTrafficClass(""), -1);
  EXPECT_EQ(parseTrafficClass("Global tclass=999"), -1);
  EXPECT_EQ(parseMlnxQosTrust("DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n"), "dscp");
  EXPECT_EQ(parseMlnxQosTrust("PFC configuration:\n"), "");
  EXPECT_EQ(priorityList(-1), "unknown");
  EXPECT_EQ(priorityList(0), "none");
  EXPECT_EQ(priorityList(0x18), "3,4");
  EXPECT_EQ(decodeIbCapabilityMask("0x04010000"), "CM_SUP,IP_BASED_GIDS");
  EXPECT_EQ(decodeIbCapabilityMask("garbage"), "");
}

TEST(QosSysfs, CollectsFixtureHost) {
  const HostInventory host = collectHostInventory(fixtureOptions("host-a"));
  const NetInterface& roce = interfaceNamed(host, "ens1f0");
  EXPECT_EQ(roce.qos.dcb.status, "configured");
  EXPECT_EQ(roce.qos.trust, "dscp");  // mlx5 with DSCP APP entries
  EXPECT_EQ(roce.qos.trustSource, "mlx5 app table");
  EXPECT_EQ(priorityList(roce.qos.ecnNpMask), "3");
  EXPECT_EQ(priorityList(roce.qos.ecnRpMask), "3");
  EXPECT_EQ(interfaceNamed(host, "eth0").qos.dcb.status, "not configured");
  EXPECT_EQ(interfaceNamed(host, "lo").qos.dcb.status, "");  // never asked: no fabric role

  EXPECT_EQ(fact(host, "qos/net/ens1f0/pfc_enabled"), "3");
  EXPECT_EQ(fact(host, "qos/net/ens1f0/app_dscp"), "26:3,48:6");
  EXPECT_EQ(fact(host, "qos/net/ens1f0/ets_tsa"), "ets,strict,strict,ets,strict,strict,strict,strict");
  EXPECT_EQ(fact(host, "qos/net/ens1f0/dcqcn/np/cnp_dscp"), "48");
  EXPECT_EQ(fact(host, "qos/net/ens1f0/dcqcn/rp/rpg_ai_rate"), "5");
  EXPECT_EQ(fact(host, "qos/net/eth0/dcb"), "not configured");
  EXPECT_EQ(fact(host, "qos/net/eth0/ecn_np"), "unknown");
  EXPECT_EQ(fact(host, "qos/net/eth0/trust"), "unknown");
  EXPECT_EQ(fact(host, "qos/net/lo/dcb"), "(absent)");
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_1/port/1/default_roce_mode"), "RoCE v2");
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_1/port/1/default_roce_tos"), "106");
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_1/port/1/traffic_class"), "106");
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_0/port/1/sm_sl"), "3");
  EXPECT_NE(fact(host, "qos/rdma/mlx5_0/port/1/cap_flags").find("CM_SUP"), std::string::npos);
  EXPECT_EQ(fact(host, "qos/vendor_tool"), "none (mlnx_qos, smpquery, mlxconfig not installed or not run)");

  // Survives the MPI gather (serialize/deserialize) exactly, and JSON carries it.
  EXPECT_EQ(deserializeInventory(serializeInventory(host)), host);
  const std::string json = toJson(host);
  EXPECT_NE(json.find("\"pfc_enabled\": \"3\""), std::string::npos);
  EXPECT_NE(toText(host).find("congestion control / QoS"), std::string::npos);
}

TEST(QosSysfs, CopiedTreeIsNeverAskedOfTheLiveKernel) {
  InventoryOptions options = fixtureOptions("host-a");
  options.dcbQuery = nullptr;  // no injected answers: a copied tree's interfaces are not this machine's
  const HostInventory host = collectHostInventory(options);
  EXPECT_EQ(interfaceNamed(host, "ens1f0").qos.dcb.status, "");
  EXPECT_EQ(interfaceNamed(host, "ens1f0").qos.trust, "");
  EXPECT_EQ(priorityList(interfaceNamed(host, "ens1f0").qos.ecnNpMask), "3");  // sysfs still read
}

TEST(QosConsistency, SameConfigurationNoQosFlags) {
  const HostInventory a = collectHostInventory(fixtureOptions("a"));
  const HostInventory b = collectHostInventory(fixtureOptions("b"));
  for (const auto& f : checkConsistency({a, b}, {}))
    EXPECT_NE(f.component.rfind("qos/", 0), 0u) << f.component << ": " << f.what;
}

TEST(QosConsistency, FlagsPfcTrustAndEcnDifferences) {
  const HostInventory a = collectHostInventory(fixtureOptions("a"));
  const HostInventory b = collectHostInventory(fixtureOptions("b"));
  HostInventory c = collectHostInventory(fixtureOptions("c"));
  NetInterface& roce = interfaceNamed(c, "ens1f0");
  roce.qos.dcb.pfcEnabledMask = 0;  // PFC missing on the RDMA priority
  roce.qos.trust = "pcp";
  roce.qos.ecnNpMask = 0;  // ECN off on this port
  const auto flags = checkConsistency({a, b, c}, {});
  const auto pfc = flagsOn(flags, "qos/net/ens1f0/pfc_enabled");
  ASSERT_EQ(pfc.size(), 1u);  // trust is pcp now, so the per-host RDMA-priority rule cannot apply
  EXPECT_EQ(pfc[0].host, "c");
  EXPECT_EQ(pfc[0].severity, Severity::error);
  EXPECT_EQ(pfc[0].expected, "3");
  EXPECT_EQ(pfc[0].found, "none");
  const auto trust = flagsOn(flags, "qos/net/ens1f0/trust");
  ASSERT_EQ(trust.size(), 1u);
  EXPECT_EQ(trust[0].expected, "dscp");
  EXPECT_EQ(trust[0].found, "pcp");
  const auto ecn = flagsOn(flags, "qos/net/ens1f0/ecn_np");
  ASSERT_EQ(ecn.size(), 1u);
  EXPECT_EQ(ecn[0].host, "c");
  EXPECT_EQ(ecn[0].found, "none");
  EXPECT_TRUE(flagsOn(flags, "qos/net/ens1f0/ecn_rp").empty());
}

TEST(QosConsistency, OneHostWithoutDcbIsFlagged) {
  const HostInventory a = collectHostInventory(fixtureOptions("a"));
  InventoryOptions options = fixtureOptions("b");
  options.dcbQuery = [](const std::string&) { return parse(readHex("eopnotsupp.hex")); };
  const HostInventory b = collectHostInventory(options);
  const HostInventory c = collectHostInventory(fixtureOptions("c"));
  const auto pfc = flagsOn(checkConsistency({a, b, c}, {}), "qos/net/ens1f0/pfc_enabled");
  ASSERT_EQ(pfc.size(), 1u);
  EXPECT_EQ(pfc[0].host, "b");
  EXPECT_EQ(pfc[0].found, "DCB not configured");
}

TEST(QosConsistency, PfcOffOnTheRdmaPriorityOfOneHost) {
  // Traffic class 106 -> DSCP 26 -> priority 3 (APP table); PFC only on 4.
  HostInventory host = collectHostInventory(fixtureOptions("solo"));
  interfaceNamed(host, "ens1f0").qos.dcb.pfcEnabledMask = 1 << 4;
  interfaceNamed(host, "ens1f0").qos.ecnNpMask = 1 << 4;
  const auto flags = checkConsistency({host}, {});
  const auto pfc = flagsOn(flags, "qos/net/ens1f0/pfc_enabled");
  ASSERT_EQ(pfc.size(), 1u);
  EXPECT_NE(pfc[0].what.find("DSCP 26 -> priority 3"), std::string::npos) << pfc[0].what;
  EXPECT_EQ(pfc[0].found, "4");
  EXPECT_EQ(flagsOn(flags, "qos/net/ens1f0/ecn_np").size(), 1u);
  // With PFC and ECN on priority 3 nothing is flagged.
  const HostInventory good = collectHostInventory(fixtureOptions("good"));
  EXPECT_TRUE(flagsOn(checkConsistency({good}, {}), "qos/net/ens1f0/pfc_enabled").empty());
}

TEST(QosManifest, LoadsAndChecksTheValidatedDesign) {
  const Manifest manifest = parseManifest(R"(name: lossless-roce
qos:
  pfc_priorities: [3]
  trust: dscp
  roce_tc: 106
  ecn_np: [3]
  ecn_rp: [3]
  dscp_map: {26: 3}
  roce_mode: RoCE v2
  ib_sl: 0
  validation: vendor-validated
)",
                                          "design.yaml");
  ASSERT_TRUE(manifest.qos);
  EXPECT_EQ(manifest.qos->pfcPriorities->value, "3");
  EXPECT_EQ(manifest.qos->dscpMap->value, "26:3");
  const HostInventory host = collectHostInventory(fixtureOptions("a"));
  const auto rows = checkManifest(manifest, {host});
  for (const auto& r : rows)
    EXPECT_EQ(r.status, ManifestStatus::match) << r.component << " found '" << r.discovered << "'";
  EXPECT_FALSE(manifestFailed(rows));
  EXPECT_EQ(row(rows, "qos/pfc_priorities@ens1f0").validation, "vendor-validated");
  EXPECT_EQ(row(rows, "qos/roce_tc@mlx5_1/1").discovered, "106");
  EXPECT_EQ(row(rows, "qos/roce_tc@mlx5_1/1/rdma_cm").discovered, "106");
  EXPECT_EQ(row(rows, "qos/roce_tc@env/NCCL_IB_TC").discovered, "106");
  EXPECT_EQ(row(rows, "qos/ib_sl@env/NCCL_IB_SL").discovered, "0");
}

TEST(QosManifest, MustMatchDifferenceFailsAdvisoryDoesNot) {
  const std::string text = R"(qos:
  pfc_priorities: [3, 4]
  trust: {value: pcp, must_match: false}
  interfaces: [ens1f0, eth0]
)";
  const Manifest manifest = parseManifest(text, "m.yaml");
  const HostInventory host = collectHostInventory(fixtureOptions("a"));
  const auto rows = checkManifest(manifest, {host});
  EXPECT_EQ(row(rows, "qos/pfc_priorities@ens1f0").status, ManifestStatus::mismatch);
  EXPECT_EQ(row(rows, "qos/pfc_priorities@ens1f0").discovered, "3");
  EXPECT_EQ(row(rows, "qos/pfc_priorities@eth0").discovered, "DCB not configured");
  EXPECT_EQ(row(rows, "qos/trust@ens1f0").status, ManifestStatus::mismatch);
  EXPECT_FALSE(row(rows, "qos/trust@ens1f0").mustMatch);
  EXPECT_TRUE(manifestFailed(rows));
  // Only the advisory item differing: the check passes.
  const auto advisory =
      checkManifest(parseManifest("qos:\n  trust: {value: pcp, must_match: false}\n", "a.yaml"), {host});
  EXPECT_FALSE(manifestFailed(advisory));
  // Nothing configured for the traffic class: missing, which fails a must-match item.
  InventoryOptions bare = fixtureOptions("bare");
  bare.environment = {};
  bare.sysRoot = kData + "/sysfs/host-a";
  HostInventory noTc = collectHostInventory(bare);
  for (auto& device : noTc.rdmaDevices)
    for (auto& port : device.ports) port.qos = PortQos{};
  const auto missing = checkManifest(parseManifest("qos:\n  roce_tc: 106\n", "t.yaml"), {noTc});
  EXPECT_EQ(row(missing, "qos/roce_tc").status, ManifestStatus::missing);
  EXPECT_TRUE(manifestFailed(missing));
}

TEST(QosManifest, BadValuesNameLineAndColumn) {
  const auto error = manifestError;
  EXPECT_EQ(error("qos:\n  pfc_priorities: [3, 9]\n"),
            "q.yaml:2:23: 'pfc_priorities' must be an integer from 0 to 7, found '9'");
  EXPECT_EQ(error("qos:\n  trust: l2\n"), "q.yaml:2:10: 'trust' must be dscp or pcp, found 'l2'");
  EXPECT_EQ(error("qos:\n  pfc_priorities: 3\n"),
            "q.yaml:2:19: 'pfc_priorities' must be a list of priorities 0..7 (e.g. [3]; [] for none), found '3'");
  EXPECT_NE(error("qos:\n  pfc: [3]\n").find("q.yaml:2:3: unknown key 'pfc' in 'qos'"), std::string::npos);
  EXPECT_NE(error("qos:\n  roce_tc: 300\n").find("q.yaml:2:12: 'roce_tc' must be an integer from 0 to 255"),
            std::string::npos);
  EXPECT_NE(error("qos:\n  dscp_map: {64: 3}\n").find("q.yaml:2:14:"), std::string::npos);
}

TEST(QosLive, ThisMachinesInterfacesWithoutDcbAreNotConfigured) {
  // The real kernel: lo never has DCB ops; a missing interface is unknown, not "not configured".
  const DcbState lo = queryDcb("lo");
  EXPECT_EQ(lo.status, "not configured") << lo.detail;
  const DcbState missing = queryDcb("fabscope-nx0");
  EXPECT_EQ(missing.status, "unknown") << missing.detail;
  InventoryOptions options;
  options.useVerbs = options.useHwloc = options.useCuda = false;
  const HostInventory host = collectHostInventory(options);
  for (const auto& net : host.interfaces) {
    if (net.qos.dcb.status.empty()) continue;
    EXPECT_TRUE(net.qos.dcb.status == "configured" || net.qos.dcb.status == "not configured")
        << net.name << ": " << net.qos.dcb.status << " " << net.qos.dcb.detail;
  }
}

// --- vendor and diagnostic tools (tests/data/vendor: formats and sources in its README)

namespace {

std::string vendorOutput(const std::string& name) {
  std::ifstream in(kData + "/vendor/" + name);
  if (!in) throw std::runtime_error("cannot open " + name);
  std::string text, line;
  while (std::getline(in, line))
    if (line.rfind("##", 0) != 0) text += line + "\n";
  return text;
}

// A folder with fake smpquery and mlxconfig printing the recorded outputs (no
// InfiniBand or ConnectX device exists here), put first on PATH while alive.
class FakeVendorTools {
 public:
  explicit FakeVendorTools(bool failing = false) {
    char pattern[] = "/tmp/fabscope-vendor-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    const std::string strip = "grep -v '^##' " + kData + "/vendor/";
    write("smpquery", failing
                          ? "echo 'ibwarn: [1] mad_rpc_open_port: can't open UMAD port' >&2; exit 255"
                          : "case \" $* \" in *' vlarb '*) " + strip + "smpquery-vlarb.txt;; *' sl2vl '*) " + strip +
                                "smpquery-sl2vl.txt;; *) exit 1;; esac\necho \"$*\" >> " + dir_ + "/smpquery.args");
    write("mlxconfig", strip + "mlxconfig-q.txt\necho \"$*\" >> " + dir_ + "/mlxconfig.args");
    oldPath_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", (dir_ + ":" + oldPath_).c_str(), 1);
  }
  ~FakeVendorTools() {
    ::setenv("PATH", oldPath_.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  std::string args(const std::string& tool) const {
    std::ifstream in(dir_ + "/" + tool + ".args");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  void write(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  }
  std::string dir_, oldPath_;
};

}  // namespace

TEST(QosVendor, ParsesSmpqueryVlArbitration) {
  const VlArbitration v = parseSmpqueryVlarb(vendorOutput("smpquery-vlarb.txt"));
  EXPECT_EQ(v.lowCap, 8);
  EXPECT_EQ(v.highCap, 8);
  ASSERT_EQ(v.low.size(), 8u);
  EXPECT_EQ(formatVlArbitration(v.low), "0:32,1:32,2:32,3:32");
  EXPECT_EQ(formatVlArbitration(v.high), "0:64");
  EXPECT_EQ(formatVlArbitration({{0, 0}, {1, 0}}), "none");
  // Not a vlarb answer, a cut one, or a bad cell: not known, never half a table.
  EXPECT_EQ(parseSmpqueryVlarb("ibwarn: can't open UMAD port\n").lowCap, -1);
  const std::string text = vendorOutput("smpquery-vlarb.txt");
  EXPECT_EQ(parseSmpqueryVlarb(text.substr(0, text.find("# High"))).lowCap, -1);
  std::string bad = text;
  bad.replace(bad.find("0x20"), 4, "0xZZ");
  EXPECT_EQ(parseSmpqueryVlarb(bad).lowCap, -1);
}

TEST(QosVendor, ParsesSmpquerySl2vlAndMlxconfig) {
  EXPECT_EQ(parseSmpquerySl2vl(vendorOutput("smpquery-sl2vl.txt")), "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3");
  EXPECT_EQ(parseSmpquerySl2vl("ports: in  0, out  0: | 0| 1|\n"), "");  // not 16 SLs
  const auto config = parseMlxconfigQuery(vendorOutput("mlxconfig-q.txt"));
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"LINK_TYPE_P1", "IB(1)"},          {"LINK_TYPE_P2", "ETH(2)"}, {"ROCE_CC_PRIO_MASK_P1", "8"},
      {"ROCE_CC_ALGORITHM_P1", "ECN(0)"}, {"CNP_DSCP_P1", "48"},      {"CNP_802P_PRIO_P1", "6"},
      {"LLDP_NB_DCBX_P1", "True(1)"}};
  EXPECT_EQ(config, expected);  // Current column; MEMIC_BAR_SIZE, NUM_OF_VFS, SRIOV_EN are not QoS
}

TEST(QosVendor, CollectsThroughTheToolsWhenInstalled) {
  FakeVendorTools tools;
  InventoryOptions options = fixtureOptions("host-a");
  options.useVendorTools = true;
  const HostInventory host = collectHostInventory(options);
  EXPECT_NE(fact(host, "qos/vendor_tool").find("smpquery ("), std::string::npos) << fact(host, "qos/vendor_tool");
  EXPECT_NE(fact(host, "qos/vendor_tool").find("mlxconfig ("), std::string::npos);
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_0/port/1/vlarb_low"), "0:32,1:32,2:32,3:32");
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_0/port/1/vlarb_high"), "0:64");
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_0/port/1/vlarb_cap"), "low 8, high 8");
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_0/port/1/sl2vl"), "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3");
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_0/firmware/ROCE_CC_PRIO_MASK_P1"), "8");
  // Asked of the port's own LID through its own adapter port, and the adapter by PCI address.
  EXPECT_NE(tools.args("smpquery").find("-C mlx5_0 -P 1 vlarb 0x12"), std::string::npos) << tools.args("smpquery");
  EXPECT_EQ(tools.args("smpquery").find("mlx5_1"), std::string::npos) << "a RoCE port has no VL arbitration";
  EXPECT_NE(tools.args("mlxconfig").find("-d 0000:3b:00.0 -e q"), std::string::npos) << tools.args("mlxconfig");
  EXPECT_EQ(deserializeInventory(serializeInventory(host)), host);
  EXPECT_NE(toJson(host).find("\"ROCE_CC_PRIO_MASK_P1\": \"8\""), std::string::npos);
  EXPECT_NE(toText(host).find("firmware (mlxconfig)"), std::string::npos);

  // Hosts whose VL arbitration or firmware CC settings differ are flagged.
  HostInventory other = host;
  other.hostname = "host-b";
  for (auto& device : other.rdmaDevices) {
    if (device.name != "mlx5_0") continue;
    device.ports[0].qos.vlArbHigh = "0:255";
    for (auto& [name, value] : device.firmwareQos)
      if (name == "ROCE_CC_PRIO_MASK_P1") value = "255";
  }
  const auto flags = checkConsistency({host, other, host}, {});
  ASSERT_EQ(flagsOn(flags, "qos/rdma/mlx5_0/port/1/vlarb_high").size(), 1u);
  EXPECT_EQ(flagsOn(flags, "qos/rdma/mlx5_0/port/1/vlarb_high")[0].host, "host-b");
  ASSERT_EQ(flagsOn(flags, "qos/rdma/mlx5_0/firmware/ROCE_CC_PRIO_MASK_P1").size(), 1u);
  EXPECT_TRUE(flagsOn(flags, "qos/rdma/mlx5_0/port/1/vlarb_low").empty());
}

TEST(QosVendor, AToolThatFailsLeavesUnknownAndANote) {
  FakeVendorTools tools(/*failing=*/true);
  InventoryOptions options = fixtureOptions("host-a");
  options.useVendorTools = true;
  const HostInventory host = collectHostInventory(options);
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_0/port/1/vlarb_low"), "unknown");
  EXPECT_EQ(fact(host, "qos/rdma/mlx5_0/port/1/sl2vl"), "unknown");
  bool noted = false;
  for (const auto& note : host.notes) noted |= note.find("smpquery vlarb of mlx5_0 port 1 failed") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(QosManifest, InfiniBandVlArbitrationAndSlToVl) {
  const std::string design = R"(qos:
  ib_vlarb_low: {0: 32, 1: 32, 2: 32, 3: 32}
  ib_vlarb_high: {0: 64}
  ib_sl2vl: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]
  must_match: true
)";
  const Manifest manifest = parseManifest(design, "ib.yaml");
  EXPECT_EQ(manifest.qos->ibVlArbHigh->value, "0:64");
  {
    FakeVendorTools tools;
    InventoryOptions options = fixtureOptions("a");
    options.useVendorTools = true;
    HostInventory host = collectHostInventory(options);
    auto rows = checkManifest(manifest, {host});
    EXPECT_EQ(row(rows, "qos/ib_vlarb_low@mlx5_0/1").status, ManifestStatus::match)
        << row(rows, "qos/ib_vlarb_low@mlx5_0/1").discovered;
    EXPECT_EQ(row(rows, "qos/ib_vlarb_high@mlx5_0/1").status, ManifestStatus::match);
    EXPECT_EQ(row(rows, "qos/ib_sl2vl@mlx5_0/1").status, ManifestStatus::match);
    EXPECT_FALSE(manifestFailed(rows));
    // Slots are summed per VL: VL 0 in two slots of 32 is the design's {0: 64}.
    host.rdmaDevices[0].ports[0].qos.vlArbHigh = "0:32,0:32";
    EXPECT_EQ(row(checkManifest(manifest, {host}), "qos/ib_vlarb_high@mlx5_0/1").status, ManifestStatus::match);
    host.rdmaDevices[0].ports[0].qos.vlArbHigh = "0:255";
    rows = checkManifest(manifest, {host});
    EXPECT_EQ(row(rows, "qos/ib_vlarb_high@mlx5_0/1").status, ManifestStatus::mismatch);
    EXPECT_TRUE(manifestFailed(rows));
  }
  // Without smpquery the tables are unknown: missing, which fails a must-match item.
  const auto rows = checkManifest(manifest, {collectHostInventory(fixtureOptions("a"))});
  EXPECT_EQ(row(rows, "qos/ib_vlarb_low@mlx5_0/1").status, ManifestStatus::missing);
  EXPECT_TRUE(manifestFailed(rows));

  const auto error = manifestError;
  EXPECT_NE(error("qos:\n  ib_vlarb_high: {15: 64}\n").find("q.yaml:2:19:"), std::string::npos);
  EXPECT_NE(error("qos:\n  ib_sl2vl: [0, 1]\n").find("q.yaml:2:13: 'ib_sl2vl' must list the VL of each of the 16 SLs"),
            std::string::npos)
      << error("qos:\n  ib_sl2vl: [0, 1]\n");
}
