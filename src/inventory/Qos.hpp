#pragma once
// Congestion control and QoS configuration of the fabric ports, as Linux shows
// it without vendor tools: DCB (PFC, ETS, APP table, trust order, buffers)
// through rtnetlink's DCB_CMD_IEEE_GET, ECN enablement and DCQCN parameters
// per priority from mlx5's /sys/class/net/<if>/ecn, the RoCE mode, ToS and
// traffic class of RDMA ports, and InfiniBand port SL/capabilities from sysfs.
// Anything that cannot be read stays unknown (-1 / ""), never guessed.
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace fabscope::inventory {

// One APP table entry (struct dcb_app of linux/dcbnl.h).
struct DcbApp {
  int selector = 0;  // 1 ethertype, 2 stream port, 3 datagram port, 4 any port, 5 DSCP, 255 PCP
  int protocol = 0;  // the ethertype, port, DSCP or PCP value
  int priority = 0;  // 802.1p priority it maps to

  bool operator==(const DcbApp&) const = default;
};

// What DCB_CMD_IEEE_GET answered for one interface.
struct DcbState {
  // "configured": the driver answered; "not configured": the interface has no
  // DCB support (EOPNOTSUPP, the normal case for virtual and most 1GbE NICs);
  // "unknown": the query failed otherwise (detail says why); "": not queried.
  std::string status;
  std::string detail;
  int dcbx = -1;  // DCB_ATTR_DCBX bits (DCB_CAP_DCBX_*), -1 when the driver has no getdcbx

  bool hasPfc = false;
  int pfcCap = 0;          // traffic classes that can be PFC-enabled at once
  int pfcEnabledMask = 0;  // bit p: PFC on priority p
  int pfcMbc = 0;          // MACsec bypass capability
  int pfcDelay = 0;        // allowance for cable delay, bit times

  bool hasEts = false;
  int etsWilling = 0;
  int etsCap = 0;
  std::array<int, 8> prioTc{};  // priority -> traffic class
  std::array<int, 8> tcTxBw{};  // bandwidth percent per traffic class
  std::array<int, 8> tcTsa{};   // 0 strict, 1 CBS, 2 ETS, 3 credit-based, 255 vendor

  std::vector<DcbApp> apps;  // the APP table (DSCP/PCP/port -> priority)

  bool hasTrust = false;        // DCB_ATTR_DCB_APP_TRUST_TABLE (kernel 6.1+ drivers that implement it)
  std::vector<int> trustOrder;  // selectors, most trusted first

  bool hasBuffer = false;  // DCB_ATTR_DCB_BUFFER (what `dcb buffer show` prints)
  std::array<int, 8> prioBuffer{};
  std::array<std::int64_t, 8> bufferSize{};
  std::int64_t bufferTotal = 0;

  bool operator==(const DcbState&) const = default;
};

struct InterfaceQos {
  DcbState dcb;
  std::string trust;        // "dscp", "pcp", "dscp,pcp", ... or "" when unknown
  std::string trustSource;  // where trust came from (dcb apptrust, mlnx_qos, mlx5 app table rule)
  int ecnNpMask = -1;       // bit p: ECN notification point (CNP generation) on priority p; -1 unknown
  int ecnRpMask = -1;       // bit p: ECN reaction point (rate reduction) on priority p; -1 unknown
  std::vector<std::pair<std::string, std::string>> dcqcn;  // "np/cnp_dscp" -> "48", "rp/rpg_ai_rate" -> ...

  bool operator==(const InterfaceQos&) const = default;
};

struct PortQos {
  std::string defaultRoceMode;   // rdma_cm configfs default_roce_mode ("RoCE v2"), "" unknown
  int defaultRoceTos = -1;       // rdma_cm configfs default_roce_tos, -1 unknown
  std::string trafficClassText;  // raw <dev>/tc/<port>/traffic_class (MLNX_OFED), "" absent
  int trafficClass = -1;         // the global traffic class parsed from it, -1 unknown
  int smSl = -1;                 // InfiniBand: sm_sl (SL to reach the subnet manager), -1 unknown
  std::string capMask;           // InfiniBand: cap_mask as sysfs prints it ("0xa659e848"), "" unknown
  // InfiniBand, from smpquery when installed (SMP MADs; sysfs shows neither):
  int vlArbLowCap = -1, vlArbHighCap = -1;  // table sizes the port has, -1 unknown
  std::string vlArbLow, vlArbHigh;          // "0:32,1:32" (VL:weight, unused slots left out), "" unknown
  std::string sl2vl;                        // "0,1,...": VL of SL 0..15, "" unknown

  bool operator==(const PortQos&) const = default;
};

// An InfiniBand port's VL arbitration tables as `smpquery vlarb` prints them.
struct VlArbitration {
  int lowCap = -1;  // -1: the text was not a complete vlarb answer
  int highCap = -1;
  std::vector<std::pair<int, int>> low, high;  // (VL, weight) per slot, as the port holds them
};

// --- rtnetlink DCB --------------------------------------------------------

// The RTM_GETDCB / DCB_CMD_IEEE_GET request for `ifname` (what `dcb pfc show dev X` sends).
std::vector<std::uint8_t> buildDcbIeeeGetRequest(const std::string& ifname, std::uint32_t sequence);

// Parses the kernel's answer to that request: one RTM_GETDCB message, or an
// NLMSG_ERROR. Pure (no system calls), so recorded reply bytes are testable.
// Malformed bytes give status "unknown" with the offset and what was wrong.
DcbState parseDcbIeeeReply(const std::uint8_t* bytes, std::size_t length);

// Sends the request on a NETLINK_ROUTE socket and waits at most timeoutMs.
DcbState queryDcb(const std::string& ifname, int timeoutMs = 1000);

// --- sysfs ------------------------------------------------------------------

// ECN enablement and DCQCN parameters under <sys>/class/net/<if>/ecn (mlx5).
void readEcnSysfs(const std::filesystem::path& sysRoot, const std::string& ifname, InterfaceQos& qos);

// RoCE mode/ToS (configfs <sys>/kernel/config/rdma_cm/<dev>/ports/<n>), traffic
// class (<dev>/tc/<n>/traffic_class) and IB sm_sl / cap_mask of one port.
PortQos readPortQosSysfs(const std::filesystem::path& sysRoot, const std::string& device, int port);

// "Global tclass=106" (MLNX_OFED), "tclass=106", or "106" -> 106; -1 otherwise.
int parseTrafficClass(const std::string& text);

// The trust line of `mlnx_qos -i <if>` output ("Priority trust state: dscp"), "" if absent.
std::string parseMlnxQosTrust(const std::string& text);

// --- vendor and diagnostic tools (QosVendor.cpp: formats and sources there) -----

VlArbitration parseSmpqueryVlarb(const std::string& text);
// "0,1,2,...": the VL of SL 0..15 from `smpquery sl2vl` of a CA; "" if not found.
std::string parseSmpquerySl2vl(const std::string& text);
// "0:32,1:32": slots with a weight, VL:weight; "none" when every slot is unused.
std::string formatVlArbitration(const std::vector<std::pair<int, int>>& entries);
// The congestion-control and QoS parameters of `mlxconfig -d <dev> -e q`, with
// their Current value (Next Boot when the output has no Current column).
std::vector<std::pair<std::string, std::string>> parseMlxconfigQuery(const std::string& text);

// Fills trust/trustSource from the DCB answer: the apptrust table when the
// driver has one; for mlx5_core (which sets DSCP trust when the first DSCP APP
// entry is added and PCP trust when the last one goes) from the APP table.
void deriveTrust(const std::string& driver, InterfaceQos& qos);

// --- names and summaries -------------------------------------------------------

std::string selectorName(int selector);  // "dscp", "pcp", "ethtype", ...
std::string tsaName(int tsa);            // "strict", "ets", ...
// "3,4" for bits 3 and 4, "none" for 0, "unknown" for -1.
std::string priorityList(int mask);
std::string dcbxName(int dcbx);  // "host,ieee", "lld_managed,cee", ... "unknown"
// "26:3,48:6" for DSCP APP entries (selector 5), sorted by DSCP.
std::string dscpMap(const DcbState& dcb);
std::string pcpMap(const DcbState& dcb);

// Decoded InfiniBand PortInfo:CapabilityMask bits set in "0x..." text (IBA 14.2.5.6), e.g. "IsSM,IsTrapSupported".
std::string decodeIbCapabilityMask(const std::string& capMask);

// Library variables that choose traffic class / service level / adaptive routing.
const std::vector<std::string>& qosEnvironmentNames();

}  // namespace fabscope::inventory
