// Fills the QoS parts of an inventory: DCB per fabric interface (rtnetlink),
// ECN/DCQCN (sysfs), port RoCE mode / traffic class / SL, and, when the tools
// are installed (never required; each run with a time limit, a failure is a
// note and the value stays unknown): mlnx_qos's trust state, smpquery's
// InfiniBand VL arbitration and SL-to-VL tables, mlxconfig's firmware
// congestion-control and QoS parameters.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <optional>

#include "inventory/QosCollect.hpp"
#include "inventory/SysfsFiles.hpp"

extern char** environ;

namespace fabscope::inventory {
namespace fs = std::filesystem;

namespace {

// Output of argv (stdout and stderr) when it exits 0 within timeoutMs; nullopt otherwise.
std::optional<std::string> runBounded(const std::vector<std::string>& argv, int timeoutMs) {
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipeFds[1]);
  if (spawned != 0) {
    ::close(pipeFds[0]);
    return std::nullopt;
  }
  std::string output;
  char buffer[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  bool timedOut = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    pollfd waiting{pipeFds[0], POLLIN, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t got = ::read(pipeFds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (output.size() < 256 * 1024) output.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(pipeFds[0]);
  if (timedOut) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timedOut || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return output;
}

bool isQosCandidate(const NetInterface& net) {
  // Virtual interfaces (veth, bridges, ifb, lo) have no DCB and no fabric role.
  return net.name != "lo" && (!net.rdmaDevice.empty() || !net.driver.empty());
}

}  // namespace

std::string findExecutable(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    auto end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty()) {
      const std::string candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return {};
}

namespace {

// smpquery (infiniband-diags) asks the port itself with SMP MADs through umad.
void querySmp(const std::string& smpquery, const RdmaDevice& device, RdmaPort& port, std::vector<std::string>& notes) {
  if (port.linkLayer != "InfiniBand" || port.lid.empty() || port.lid == "0x0" || port.lid == "0") return;
  const std::vector<std::string> local = {smpquery, "-C", device.name, "-P", std::to_string(port.number)};
  const std::string where = device.name + " port " + std::to_string(port.number);
  auto ask = [&](const char* op) {
    auto argv = local;
    argv.insert(argv.end(), {op, port.lid});
    auto output = runBounded(argv, 5000);
    if (!output) notes.push_back("qos: " + smpquery + " " + op + " of " + where + " failed or took over 5 s");
    return output;
  };
  if (auto output = ask("vlarb")) {
    const VlArbitration vlarb = parseSmpqueryVlarb(*output);
    if (vlarb.lowCap < 0) {
      notes.push_back("qos: smpquery vlarb of " + where + ": output not understood");
    } else {
      port.qos.vlArbLowCap = vlarb.lowCap;
      port.qos.vlArbHighCap = vlarb.highCap;
      port.qos.vlArbLow = vlarb.lowCap > 0 ? formatVlArbitration(vlarb.low) : "none";
      port.qos.vlArbHigh = vlarb.highCap > 0 ? formatVlArbitration(vlarb.high) : "none";
    }
  }
  if (auto output = ask("sl2vl")) {
    port.qos.sl2vl = parseSmpquerySl2vl(*output);
    if (port.qos.sl2vl.empty()) notes.push_back("qos: smpquery sl2vl of " + where + ": output not understood");
  }
}

}  // namespace

void collectQos(HostInventory& inventory, const InventoryOptions& options) {
  for (auto& device : inventory.rdmaDevices)
    for (auto& port : device.ports) port.qos = readPortQosSysfs(options.sysRoot, device.name, port.number);

  std::string mlnxQos, smpquery, mlxconfig;
  if (options.useVendorTools) {
    mlnxQos = findExecutable("mlnx_qos");
    smpquery = findExecutable("smpquery");
    mlxconfig = findExecutable("mlxconfig");
    for (const auto& [name, path] :
         {std::pair{"mlnx_qos", &mlnxQos}, {"smpquery", &smpquery}, {"mlxconfig", &mlxconfig}})
      if (!path->empty())
        inventory.qosVendorTool +=
            (inventory.qosVendorTool.empty() ? "" : ", ") + std::string(name) + " (" + *path + ")";
  }
  for (auto& device : inventory.rdmaDevices) {
    if (!smpquery.empty())
      for (auto& port : device.ports) querySmp(smpquery, device, port, inventory.notes);
    if (!mlxconfig.empty() && !device.pciAddress.empty()) {
      if (auto output = runBounded({mlxconfig, "-d", device.pciAddress, "-e", "q"}, 10000))
        device.firmwareQos = parseMlxconfigQuery(*output);
      else
        inventory.notes.push_back("qos: " + mlxconfig + " -d " + device.pciAddress + " -e q failed or took over 10 s");
    }
  }
  // The kernel answers for this machine's interfaces only: a copied sysfs tree
  // (tests) gets DCB answers from dcbQuery or none at all.
  std::error_code ec;
  const bool liveSysfs = fs::equivalent(options.sysRoot, "/sys", ec);
  for (auto& net : inventory.interfaces) {
    if (!isQosCandidate(net)) continue;
    if (options.dcbQuery)
      net.qos.dcb = options.dcbQuery(net.name);
    else if (options.useNetlink && liveSysfs)
      net.qos.dcb = queryDcb(net.name);
    readEcnSysfs(options.sysRoot, net.name, net.qos);
    deriveTrust(net.driver, net.qos);
    if (!mlnxQos.empty() && net.qos.trustSource != "dcb apptrust") {
      if (auto output = runBounded({mlnxQos, "-i", net.name}, 5000)) {
        const std::string trust = parseMlnxQosTrust(*output);
        if (!trust.empty()) {
          net.qos.trust = trust;
          net.qos.trustSource = "mlnx_qos";
        }
      } else {
        inventory.notes.push_back("qos: " + mlnxQos + " -i " + net.name + " failed or took over 5 s");
      }
    }
    if (net.qos.dcb.status == "unknown")
      inventory.notes.push_back("qos: DCB of " + net.name + " unknown: " + net.qos.dcb.detail);
  }
}

}  // namespace fabscope::inventory
