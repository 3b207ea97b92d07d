// DCB over rtnetlink: the request iproute2's `dcb` sends (RTM_GETDCB with
// DCB_CMD_IEEE_GET and DCB_ATTR_IFNAME) and a bounds-checked parser of the
// answer the kernel builds in net/dcb/dcbnl.c (dcbnl_ieee_fill): top-level
// DCB_ATTR_IFNAME, DCB_ATTR_IEEE (nested: ETS, PFC, APP_TABLE, DCB_BUFFER,
// APP_TRUST_TABLE, ...) and DCB_ATTR_DCBX. Structure layouts are those of
// linux/dcbnl.h (struct ieee_ets, ieee_pfc, dcb_app, dcbnl_buffer).
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "inventory/Qos.hpp"

namespace fabscope::inventory {

namespace {

// Newer than some installed linux/dcbnl.h headers (kernel 6.1/6.3 uapi).
constexpr int kAttrDcbBuffer = 10;            // DCB_ATTR_DCB_BUFFER
constexpr int kAttrAppTrustTable = 11;        // DCB_ATTR_DCB_APP_TRUST_TABLE
constexpr int kAttrIeeeApp = 1;               // DCB_ATTR_IEEE_APP (IEEE selectors)
constexpr int kAttrDcbApp = 2;                // DCB_ATTR_DCB_APP (selector 255, PCP)
constexpr std::size_t kIeeeEtsSize = 59;      // sizeof(struct ieee_ets)
constexpr std::size_t kIeeePfcHead = 8;       // pfc_cap, pfc_en, mbc, pad, delay (u16) before the counters
constexpr std::size_t kDcbnlBufferSize = 44;  // u8 prio2buffer[8], u32 buffer_size[8], u32 total_size
constexpr std::size_t kAttrHeader = 4;        // struct nlattr

std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t(3); }

std::uint16_t load16(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, sizeof v);  // host byte order, as the kernel writes it
  return v;
}
std::uint32_t load32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Attribute {
  int type = 0;
  const std::uint8_t* data = nullptr;
  std::size_t length = 0;  // payload bytes
  std::size_t offset = 0;  // of the attribute header in the whole reply
};

// Walks the attributes in [begin, begin+length); false with `problem` set on a bad length.
template <typename Fn>
bool forEachAttribute(const std::uint8_t* base, std::size_t begin, std::size_t length, std::string& problem, Fn fn) {
  std::size_t at = begin;
  const std::size_t end = begin + length;
  while (at + kAttrHeader <= end) {
    const std::uint16_t nlaLength = load16(base + at);
    const std::uint16_t nlaType = load16(base + at + 2) & NLA_TYPE_MASK;
    if (nlaLength < kAttrHeader || at + nlaLength > end) {
      problem = "attribute at byte " + std::to_string(at) + " has length " + std::to_string(nlaLength) + " but " +
                std::to_string(end - at) + " bytes remain";
      return false;
    }
    if (!fn(Attribute{nlaType, base + at + kAttrHeader, nlaLength - kAttrHeader, at})) return false;
    at += align4(nlaLength);
  }
  return true;
}

std::string errnoText(int error) {
  char buffer[128];
  const char* text = strerror_r(error, buffer, sizeof buffer);  // GNU variant
  return text;
}

DcbState failed(const std::string& status, const std::string& detail) {
  DcbState state;
  state.status = status;
  state.detail = detail;
  return state;
}

bool parseIeee(const std::uint8_t* base, const Attribute& ieee, DcbState& state, std::string& problem) {
  auto tooShort = [&](const Attribute& a, const char* what, std::size_t need) {
    problem = std::string(what) + " at byte " + std::to_string(a.offset) + " has " + std::to_string(a.length) +
              " bytes, expected at least " + std::to_string(need);
    return false;
  };
  const std::size_t begin = static_cast<std::size_t>(ieee.data - base);
  return forEachAttribute(base, begin, ieee.length, problem, [&](const Attribute& a) {
    switch (a.type) {
      case DCB_ATTR_IEEE_ETS: {
        if (a.length < kIeeeEtsSize) return tooShort(a, "DCB_ATTR_IEEE_ETS", kIeeeEtsSize);
        state.hasEts = true;
        state.etsWilling = a.data[0];
        state.etsCap = a.data[1];
        for (int i = 0; i < 8; ++i) {
          state.tcTxBw[i] = a.data[3 + i];
          state.tcTsa[i] = a.data[19 + i];
          state.prioTc[i] = a.data[27 + i];
        }
        return true;
      }
      case DCB_ATTR_IEEE_PFC: {
        if (a.length < kIeeePfcHead) return tooShort(a, "DCB_ATTR_IEEE_PFC", kIeeePfcHead);
        state.hasPfc = true;
        state.pfcCap = a.data[0];
        state.pfcEnabledMask = a.data[1];
        state.pfcMbc = a.data[2];
        state.pfcDelay = load16(a.data + 4);
        return true;
      }
      case DCB_ATTR_IEEE_APP_TABLE: {
        const std::size_t tableBegin = static_cast<std::size_t>(a.data - base);
        return forEachAttribute(base, tableBegin, a.length, problem, [&](const Attribute& entry) {
          if (entry.type != kAttrIeeeApp && entry.type != kAttrDcbApp) return true;
          if (entry.length < 4) return tooShort(entry, "an APP table entry", 4);
          state.apps.push_back({entry.data[0], load16(entry.data + 2), entry.data[1]});
          return true;
        });
      }
      case kAttrAppTrustTable: {
        state.hasTrust = true;
        const std::size_t tableBegin = static_cast<std::size_t>(a.data - base);
        return forEachAttribute(base, tableBegin, a.length, problem, [&](const Attribute& entry) {
          if (entry.type != kAttrIeeeApp && entry.type != kAttrDcbApp) return true;
          if (entry.length < 1) return tooShort(entry, "an APP trust entry", 1);
          state.trustOrder.push_back(entry.data[0]);
          return true;
        });
      }
      case kAttrDcbBuffer: {
        if (a.length < kDcbnlBufferSize) return tooShort(a, "DCB_ATTR_DCB_BUFFER", kDcbnlBufferSize);
        state.hasBuffer = true;
        for (int i = 0; i < 8; ++i) {
          state.prioBuffer[i] = a.data[i];
          state.bufferSize[i] = load32(a.data + 8 + 4 * i);
        }
        state.bufferTotal = load32(a.data + 40);
        return true;
      }
      default:
        return true;  // peer tables, maxrate, QCN, rewrite: not recorded
    }
  });
}

}  // namespace

std::vector<std::uint8_t> buildDcbIeeeGetRequest(const std::string& ifname, std::uint32_t sequence) {
  const std::size_t nameBytes = ifname.size() + 1;  // NLA_NUL_STRING
  const std::size_t total = NLMSG_HDRLEN + align4(sizeof(dcbmsg)) + align4(kAttrHeader + nameBytes);
  std::vector<std::uint8_t> bytes(total, 0);
  nlmsghdr header{};
  header.nlmsg_len = static_cast<std::uint32_t>(total);
  header.nlmsg_type = RTM_GETDCB;
  header.nlmsg_flags = NLM_F_REQUEST;
  header.nlmsg_seq = sequence;
  std::memcpy(bytes.data(), &header, sizeof header);
  dcbmsg message{};
  message.dcb_family = AF_UNSPEC;
  message.cmd = DCB_CMD_IEEE_GET;
  std::memcpy(bytes.data() + NLMSG_HDRLEN, &message, sizeof message);
  const std::size_t at = NLMSG_HDRLEN + align4(sizeof(dcbmsg));
  const std::uint16_t nlaLength = static_cast<std::uint16_t>(kAttrHeader + nameBytes);
  const std::uint16_t nlaType = DCB_ATTR_IFNAME;
  std::memcpy(bytes.data() + at, &nlaLength, 2);
  std::memcpy(bytes.data() + at + 2, &nlaType, 2);
  std::memcpy(bytes.data() + at + kAttrHeader, ifname.c_str(), nameBytes);
  return bytes;
}

DcbState parseDcbIeeeReply(const std::uint8_t* bytes, std::size_t length) {
  if (length < NLMSG_HDRLEN)
    return failed("unknown", "DCB reply of " + std::to_string(length) + " bytes is shorter than a netlink header");
  nlmsghdr header;
  std::memcpy(&header, bytes, sizeof header);
  if (header.nlmsg_len < NLMSG_HDRLEN || header.nlmsg_len > length)
    return failed("unknown", "DCB reply: netlink length " + std::to_string(header.nlmsg_len) + " does not fit the " +
                                 std::to_string(length) + " bytes received");
  if (header.nlmsg_type == NLMSG_ERROR) {
    if (header.nlmsg_len < NLMSG_HDRLEN + sizeof(int)) return failed("unknown", "DCB reply: truncated NLMSG_ERROR");
    int error;
    std::memcpy(&error, bytes + NLMSG_HDRLEN, sizeof error);
    error = -error;
    if (error == 0) return failed("unknown", "DCB reply: an acknowledgement instead of the configuration");
    // EOPNOTSUPP: the driver registers no dcbnl_ops (dcb_doit); 524 is the kernel's ENOTSUPP.
    if (error == EOPNOTSUPP || error == 524)
      return failed("not configured",
                    "the interface has no DCB support (DCB_CMD_IEEE_GET: " + errnoText(EOPNOTSUPP) + ")");
    if (error == EINVAL)
      return failed("unknown", "DCB_CMD_IEEE_GET: " + errnoText(error) +
                                   " (older kernels also answer this for an interface without DCB)");
    return failed("unknown", "DCB_CMD_IEEE_GET: " + errnoText(error));
  }
  if (header.nlmsg_type != RTM_GETDCB)
    return failed("unknown", "DCB reply: netlink message type " + std::to_string(header.nlmsg_type) +
                                 ", expected RTM_GETDCB (" + std::to_string(RTM_GETDCB) + ")");
  if (header.nlmsg_len < NLMSG_HDRLEN + sizeof(dcbmsg)) return failed("unknown", "DCB reply: no dcbmsg header");
  dcbmsg message;
  std::memcpy(&message, bytes + NLMSG_HDRLEN, sizeof message);
  if (message.cmd != DCB_CMD_IEEE_GET)
    return failed("unknown", "DCB reply: command " + std::to_string(message.cmd) + ", expected DCB_CMD_IEEE_GET (" +
                                 std::to_string(DCB_CMD_IEEE_GET) + ")");
  DcbState state;
  state.status = "configured";
  std::string problem;
  bool sawIeee = false;
  const std::size_t begin = NLMSG_HDRLEN + align4(sizeof(dcbmsg));
  const bool ok = forEachAttribute(bytes, begin, header.nlmsg_len - begin, problem, [&](const Attribute& a) {
    if (a.type == DCB_ATTR_DCBX) {
      if (a.length < 1) {
        problem = "DCB_ATTR_DCBX at byte " + std::to_string(a.offset) + " is empty";
        return false;
      }
      state.dcbx = a.data[0];
    } else if (a.type == DCB_ATTR_IEEE) {
      sawIeee = true;
      return parseIeee(bytes, a, state, problem);
    }
    return true;
  });
  if (!ok) return failed("unknown", "DCB reply: " + problem);
  if (!sawIeee) return failed("unknown", "DCB reply without DCB_ATTR_IEEE");
  return state;
}

DcbState queryDcb(const std::string& ifname, int timeoutMs) {
  if (ifname.empty() || ifname.size() >= 16) return failed("unknown", "bad interface name '" + ifname + "'");
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return failed("unknown", "netlink socket: " + errnoText(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  static std::atomic<std::uint32_t> nextSequence{1};
  const std::uint32_t sequence = nextSequence++;
  const auto request = buildDcbIeeeGetRequest(ifname, sequence);
  if (::sendto(fd, request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
    return failed("unknown", "netlink send: " + errnoText(errno));
  std::vector<std::uint8_t> buffer(64 * 1024);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return failed("unknown", "no DCB reply within " + std::to_string(timeoutMs) + " ms");
    pollfd waiting{fd, POLLIN, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return failed("unknown", "poll: " + errnoText(errno));
    if (ready == 0) continue;
    const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0) return failed("unknown", "netlink receive: " + errnoText(errno));
    if (static_cast<std::size_t>(got) < NLMSG_HDRLEN) continue;
    nlmsghdr header;
    std::memcpy(&header, buffer.data(), sizeof header);
    if (header.nlmsg_seq != sequence) continue;  // a late answer to an earlier query
    return parseDcbIeeeReply(buffer.data(), static_cast<std::size_t>(got));
  }
}

}  // namespace fabscope::inventory
