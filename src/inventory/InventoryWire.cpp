#include "inventory/InventoryWire.hpp"

#include <charconv>
#include <stdexcept>

namespace fabscope::inventory {

namespace {

constexpr std::string_view kMagic = "fabscope-inventory-2\n";  // 2: QoS fields

// Every value is "<length>:<bytes>", numbers in their shortest exact text.
class Writer {
 public:
  void text(std::string_view value) {
    out_ += std::to_string(value.size());
    out_.push_back(':');
    out_.append(value);
  }
  void integer(long long value) { text(std::to_string(value)); }
  void real(double value) {
    char buffer[64];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    text(std::string_view(buffer, ec == std::errc() ? static_cast<std::size_t>(end - buffer) : 0));
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  std::string text() {
    const auto colon = in_.find(':', pos_);
    if (colon == std::string_view::npos) fail("missing length");
    std::size_t length = 0;
    auto [ptr, ec] = std::from_chars(in_.data() + pos_, in_.data() + colon, length);
    if (ec != std::errc() || ptr != in_.data() + colon) fail("bad length");
    if (colon + 1 + length > in_.size()) fail("truncated value");
    std::string value(in_.substr(colon + 1, length));
    pos_ = colon + 1 + length;
    return value;
  }
  long long integer() {
    const std::string value = text();
    long long number = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || ptr != value.data() + value.size()) fail("bad integer '" + value + "'");
    return number;
  }
  int small() { return static_cast<int>(integer()); }
  std::size_t count() {
    long long n = integer();
    // Each element takes at least two bytes, so a larger count is corruption.
    if (n < 0 || static_cast<std::size_t>(n) > in_.size()) fail("bad count");
    return static_cast<std::size_t>(n);
  }
  double real() {
    const std::string value = text();
    double number = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || ptr != value.data() + value.size()) fail("bad number '" + value + "'");
    return number;
  }
  void expectMagic() {
    if (in_.substr(0, kMagic.size()) != kMagic) fail("not a serialized inventory");
    pos_ = kMagic.size();
  }
  void expectEnd() const {
    if (pos_ != in_.size()) fail("trailing bytes");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("deserializeInventory: " + what + " at byte " + std::to_string(pos_));
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

template <typename T, typename Fn>
void writeList(Writer& w, const std::vector<T>& items, Fn writeOne) {
  w.integer(static_cast<long long>(items.size()));
  for (const auto& item : items) writeOne(item);
}

template <typename T, typename Fn>
std::vector<T> readList(Reader& r, Fn readOne) {
  std::vector<T> items(r.count());
  for (auto& item : items) readOne(item);
  return items;
}

void writeDcb(Writer& w, const DcbState& d) {
  w.text(d.status);
  w.text(d.detail);
  for (int v : {d.dcbx, d.hasPfc ? 1 : 0, d.pfcCap, d.pfcEnabledMask, d.pfcMbc, d.pfcDelay, d.hasEts ? 1 : 0,
                d.etsWilling, d.etsCap})
    w.integer(v);
  for (const auto* table : {&d.prioTc, &d.tcTxBw, &d.tcTsa})
    for (int v : *table) w.integer(v);
  writeList(w, d.apps, [&](const DcbApp& a) {
    w.integer(a.selector);
    w.integer(a.protocol);
    w.integer(a.priority);
  });
  w.integer(d.hasTrust ? 1 : 0);
  writeList(w, d.trustOrder, [&](int s) { w.integer(s); });
  w.integer(d.hasBuffer ? 1 : 0);
  for (int v : d.prioBuffer) w.integer(v);
  for (auto v : d.bufferSize) w.integer(v);
  w.integer(d.bufferTotal);
}

DcbState readDcb(Reader& r) {
  DcbState d;
  d.status = r.text();
  d.detail = r.text();
  d.dcbx = r.small();
  d.hasPfc = r.integer() != 0;
  for (int* v : {&d.pfcCap, &d.pfcEnabledMask, &d.pfcMbc, &d.pfcDelay}) *v = r.small();
  d.hasEts = r.integer() != 0;
  d.etsWilling = r.small();
  d.etsCap = r.small();
  for (auto* table : {&d.prioTc, &d.tcTxBw, &d.tcTsa})
    for (int& v : *table) v = r.small();
  d.apps = readList<DcbApp>(r, [&](DcbApp& a) {
    a.selector = r.small();
    a.protocol = r.small();
    a.priority = r.small();
  });
  d.hasTrust = r.integer() != 0;
  d.trustOrder = readList<int>(r, [&](int& s) { s = r.small(); });
  d.hasBuffer = r.integer() != 0;
  for (int& v : d.prioBuffer) v = r.small();
  for (auto& v : d.bufferSize) v = r.integer();
  d.bufferTotal = r.integer();
  return d;
}

void writeInterfaceQos(Writer& w, const InterfaceQos& q) {
  writeDcb(w, q.dcb);
  w.text(q.trust);
  w.text(q.trustSource);
  w.integer(q.ecnNpMask);
  w.integer(q.ecnRpMask);
  writeList(w, q.dcqcn, [&](const std::pair<std::string, std::string>& p) {
    w.text(p.first);
    w.text(p.second);
  });
}

InterfaceQos readInterfaceQos(Reader& r) {
  InterfaceQos q;
  q.dcb = readDcb(r);
  q.trust = r.text();
  q.trustSource = r.text();
  q.ecnNpMask = r.small();
  q.ecnRpMask = r.small();
  q.dcqcn = readList<std::pair<std::string, std::string>>(r, [&](std::pair<std::string, std::string>& p) {
    p.first = r.text();
    p.second = r.text();
  });
  return q;
}

void writePortQos(Writer& w, const PortQos& q) {
  w.text(q.defaultRoceMode);
  w.integer(q.defaultRoceTos);
  w.text(q.trafficClassText);
  w.integer(q.trafficClass);
  w.integer(q.smSl);
  w.text(q.capMask);
  w.integer(q.vlArbLowCap);
  w.integer(q.vlArbHighCap);
  w.text(q.vlArbLow);
  w.text(q.vlArbHigh);
  w.text(q.sl2vl);
}

PortQos readPortQos(Reader& r) {
  PortQos q;
  q.defaultRoceMode = r.text();
  q.defaultRoceTos = r.small();
  q.trafficClassText = r.text();
  q.trafficClass = r.small();
  q.smSl = r.small();
  q.capMask = r.text();
  q.vlArbLowCap = r.small();
  q.vlArbHighCap = r.small();
  q.vlArbLow = r.text();
  q.vlArbHigh = r.text();
  q.sl2vl = r.text();
  return q;
}

}  // namespace

std::string serializeInventory(const HostInventory& inv) {
  Writer w;
  w.out().append(kMagic);
  w.text(inv.hostname);
  writeList(w, inv.rdmaDevices, [&](const RdmaDevice& d) {
    for (const std::string* s : {&d.name, &d.firmware, &d.nodeGuid, &d.boardId, &d.hcaType, &d.nodeType, &d.pciAddress,
                                 &d.devicePath, &d.source})
      w.text(*s);
    w.integer(d.numaNode);
    writeList(w, d.netdevs, [&](const std::string& n) { w.text(n); });
    writeList(w, d.ports, [&](const RdmaPort& p) {
      w.integer(p.number);
      for (const std::string* s : {&p.state, &p.physState, &p.linkLayer, &p.rate, &p.speedName, &p.lid}) w.text(*s);
      w.real(p.rateGbps);
      w.integer(p.width);
      w.integer(p.activeMtu);
      writeList(w, p.gids, [&](const GidEntry& g) {
        w.integer(g.index);
        w.text(g.gid);
        w.text(g.type);
        w.text(g.netdev);
      });
      writePortQos(w, p.qos);
    });
    writeList(w, d.firmwareQos, [&](const std::pair<std::string, std::string>& p) {
      w.text(p.first);
      w.text(p.second);
    });
  });
  writeList(w, inv.interfaces, [&](const NetInterface& n) {
    for (const std::string* s : {&n.name, &n.operstate, &n.macAddress, &n.driver, &n.driverVersion, &n.pciAddress,
                                 &n.devicePath, &n.rdmaDevice})
      w.text(*s);
    w.integer(n.speedMbps);
    w.integer(n.mtu);
    w.integer(n.numaNode);
    writeInterfaceQos(w, n.qos);
  });
  writeList(w, inv.gpus, [&](const GpuInfo& g) {
    w.integer(g.index);
    w.text(g.model);
    w.text(g.pciAddress);
    w.text(g.devicePath);
    w.integer(g.numaNode);
  });
  writeList(w, inv.affinity, [&](const GpuNicAffinity& a) {
    w.integer(a.gpu);
    w.text(a.nic);
    w.text(a.relation);
    w.integer(a.closest ? 1 : 0);
  });
  const SoftwareVersions& v = inv.versions;
  for (const std::string* s : {&v.fabscope, &v.mpi, &v.ucx, &v.nccl, &v.cudaRuntime, &v.cudaDriver, &v.nvidiaDriver,
                               &v.kernel, &v.kernelBuild, &v.os})
    w.text(*s);
  writeList(w, inv.environment, [&](const std::pair<std::string, std::string>& e) {
    w.text(e.first);
    w.text(e.second);
  });
  w.text(inv.numaSource);
  w.text(inv.qosVendorTool);
  writeList(w, inv.notes, [&](const std::string& n) { w.text(n); });
  return std::move(w.out());
}

HostInventory deserializeInventory(std::string_view bytes) {
  Reader r(bytes);
  r.expectMagic();
  HostInventory inv;
  inv.hostname = r.text();
  inv.rdmaDevices = readList<RdmaDevice>(r, [&](RdmaDevice& d) {
    for (std::string* s : {&d.name, &d.firmware, &d.nodeGuid, &d.boardId, &d.hcaType, &d.nodeType, &d.pciAddress,
                           &d.devicePath, &d.source})
      *s = r.text();
    d.numaNode = r.small();
    d.netdevs = readList<std::string>(r, [&](std::string& n) { n = r.text(); });
    d.ports = readList<RdmaPort>(r, [&](RdmaPort& p) {
      p.number = r.small();
      for (std::string* s : {&p.state, &p.physState, &p.linkLayer, &p.rate, &p.speedName, &p.lid}) *s = r.text();
      p.rateGbps = r.real();
      p.width = r.small();
      p.activeMtu = r.small();
      p.gids = readList<GidEntry>(r, [&](GidEntry& g) {
        g.index = r.small();
        g.gid = r.text();
        g.type = r.text();
        g.netdev = r.text();
      });
      p.qos = readPortQos(r);
    });
    d.firmwareQos = readList<std::pair<std::string, std::string>>(r, [&](std::pair<std::string, std::string>& p) {
      p.first = r.text();
      p.second = r.text();
    });
  });
  inv.interfaces = readList<NetInterface>(r, [&](NetInterface& n) {
    for (std::string* s : {&n.name, &n.operstate, &n.macAddress, &n.driver, &n.driverVersion, &n.pciAddress,
                           &n.devicePath, &n.rdmaDevice})
      *s = r.text();
    n.speedMbps = r.integer();
    n.mtu = r.small();
    n.numaNode = r.small();
    n.qos = readInterfaceQos(r);
  });
  inv.gpus = readList<GpuInfo>(r, [&](GpuInfo& g) {
    g.index = r.small();
    g.model = r.text();
    g.pciAddress = r.text();
    g.devicePath = r.text();
    g.numaNode = r.small();
  });
  inv.affinity = readList<GpuNicAffinity>(r, [&](GpuNicAffinity& a) {
    a.gpu = r.small();
    a.nic = r.text();
    a.relation = r.text();
    a.closest = r.integer() != 0;
  });
  SoftwareVersions& v = inv.versions;
  for (std::string* s : {&v.fabscope, &v.mpi, &v.ucx, &v.nccl, &v.cudaRuntime, &v.cudaDriver, &v.nvidiaDriver,
                         &v.kernel, &v.kernelBuild, &v.os})
    *s = r.text();
  inv.environment = readList<std::pair<std::string, std::string>>(r, [&](std::pair<std::string, std::string>& e) {
    e.first = r.text();
    e.second = r.text();
  });
  inv.numaSource = r.text();
  inv.qosVendorTool = r.text();
  inv.notes = readList<std::string>(r, [&](std::string& n) { n = r.text(); });
  r.expectEnd();
  return inv;
}

}  // namespace fabscope::inventory
