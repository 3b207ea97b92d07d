#include "validity/Validity.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "fabscope/BuildConfig.hpp"

namespace fabscope::validity {
namespace {

std::string firstLineOf(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::string formatNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

struct Machine {
  std::vector<const RankFacts*> ranks;
};

std::map<std::string, Machine> byMachine(const std::vector<RankFacts>& ranks) {
  std::map<std::string, Machine> machines;
  for (const auto& r : ranks) machines[r.machine].ranks.push_back(&r);
  return machines;
}

std::vector<std::string> allHostsOf(const std::vector<RankFacts>& ranks) {
  std::set<std::string> hosts;
  for (const auto& r : ranks) hosts.insert(r.host);
  return {hosts.begin(), hosts.end()};
}

// One finding per host in `hosts`, or one for "*" when they are all the run's hosts.
void addForHosts(std::vector<Finding>& out, const std::vector<std::string>& hosts,
                 const std::vector<std::string>& allHosts, Finding finding) {
  const auto label = hostsLabel(hosts, allHosts);
  if (label == "*") {
    finding.host = "*";
    out.push_back(std::move(finding));
    return;
  }
  for (const auto& h : hosts) {
    finding.host = h;
    out.push_back(finding);
  }
}

std::vector<std::string> hostsOf(const std::vector<const RankFacts*>& ranks) {
  std::set<std::string> hosts;
  for (const auto* r : ranks) hosts.insert(r->host);
  return {hosts.begin(), hosts.end()};
}

std::string joined(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

}  // namespace

std::string hostsLabel(const std::vector<std::string>& machineHosts, const std::vector<std::string>& allHosts) {
  const std::set<std::string> mine(machineHosts.begin(), machineHosts.end());
  const std::set<std::string> all(allHosts.begin(), allHosts.end());
  if (!all.empty() && mine == all) return "*";
  std::string out;
  for (const auto& h : mine) out += (out.empty() ? "" : ",") + h;
  return out;
}

std::vector<Finding> oversubscription(const std::vector<RankFacts>& ranks) {
  std::vector<Finding> out;
  const auto allHosts = allHostsOf(ranks);
  for (const auto& [id, machine] : byMachine(ranks)) {
    std::set<std::vector<int>> candidates;
    std::set<int> everything;
    for (const auto* r : machine.ranks) {
      if (r->cpus.empty()) continue;  // unreadable: nothing to judge
      candidates.insert(r->cpus);
      everything.insert(r->cpus.begin(), r->cpus.end());
    }
    candidates.insert({everything.begin(), everything.end()});
    // The worst set: most ranks per CPU.
    double worstRatio = 1;
    std::vector<const RankFacts*> worstRanks;
    std::size_t worstCpus = 0;
    for (const auto& cpus : candidates) {
      if (cpus.empty()) continue;
      std::vector<const RankFacts*> inside;
      for (const auto* r : machine.ranks)
        if (!r->cpus.empty() && std::includes(cpus.begin(), cpus.end(), r->cpus.begin(), r->cpus.end()))
          inside.push_back(r);
      const double ratio = static_cast<double>(inside.size()) / static_cast<double>(cpus.size());
      if (ratio > worstRatio) {
        worstRatio = ratio;
        worstRanks = inside;
        worstCpus = cpus.size();
      }
    }
    if (worstRanks.empty()) continue;
    const auto hosts = hostsOf(worstRanks);
    Finding f;
    f.what = oversubscribed;
    f.value = static_cast<double>(worstRanks.size());
    f.limit = static_cast<double>(worstCpus);
    f.effect = std::to_string(worstRanks.size()) + " ranks (of " + std::to_string(hosts.size()) +
               " host(s)) may run on only " + std::to_string(worstCpus) +
               " CPU(s) of one machine: a waiting rank holds a CPU another needs, so times include the kernel "
               "scheduler's slices (milliseconds) unless waits yield, and even then latency resolution is "
               "bounded by the wake-up time";
    addForHosts(out, hosts, allHosts, f);
  }
  return out;
}

bool waitsMustYield(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.what == oversubscribed; });
}

std::vector<Finding> governors(const std::vector<RankFacts>& ranks) {
  std::vector<Finding> out;
  const auto allHosts = allHostsOf(ranks);
  for (const auto& [id, machine] : byMachine(ranks)) {
    std::map<int, std::string> governorOfCpu;
    for (const auto* r : machine.ranks)
      for (std::size_t i = 0; i < r->cpus.size() && i < r->governors.size(); ++i)
        if (!r->governors[i].empty()) governorOfCpu[r->cpus[i]] = r->governors[i];
    std::set<std::string> names;
    int notPerformance = 0;
    for (const auto& [cpu, g] : governorOfCpu)
      if (g != "performance") {
        ++notPerformance;
        names.insert(g);
      }
    if (notPerformance == 0) continue;
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    Finding f;
    f.what = cpuGovernor;
    f.value = notPerformance;
    f.limit = 0;
    f.effect = std::to_string(notPerformance) + " of the " + std::to_string(governorOfCpu.size()) +
               " CPU(s) the ranks use scale their clock with load (governor " + list +
               ", not performance): latencies vary with the frequency, and the first iterations run slow";
    addForHosts(out, hostsOf(machine.ranks), allHosts, f);
  }
  return out;
}

std::vector<Finding> busyMachines(const std::vector<RankFacts>& ranks) {
  std::vector<Finding> out;
  const auto allHosts = allHostsOf(ranks);
  for (const auto& [id, machine] : byMachine(ranks)) {
    const RankFacts* any = machine.ranks.front();
    if (any->onlineCpus <= 0) continue;
    // Each rank measured the same window; a rank's own wake-up adds to its reading,
    // so the lowest reading is the closest to the others' work alone.
    double busy = -1;
    for (const auto* r : machine.ranks)
      if (r->otherBusyCpus >= 0) busy = busy < 0 ? r->otherBusyCpus : std::min(busy, r->otherBusyCpus);
    if (busy < 0) continue;
    const double free = std::max(0.5, static_cast<double>(any->onlineCpus) - static_cast<double>(machine.ranks.size()));
    if (busy <= free) continue;
    Finding f;
    f.what = busyHost;
    f.value = busy;
    f.limit = free;
    f.effect = "the machine was busy at start: other work kept " + formatNumber(busy) + " of its " +
               std::to_string(any->onlineCpus) + " CPUs busy (measured while every rank slept), more than the " +
               formatNumber(free) + " the run's " + std::to_string(machine.ranks.size()) +
               " rank(s) leave free: it competes for the CPUs and its interference is in the times";
    addForHosts(out, hostsOf(machine.ranks), allHosts, f);
  }
  return out;
}

std::vector<Finding> atStart(const std::vector<RankFacts>& ranks) {
  auto out = oversubscription(ranks);
  for (auto* more : {&governors, &busyMachines}) {
    auto found = (*more)(ranks);
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::vector<Finding> clockSync(std::int64_t worstUncertaintyNs, double smallestLatencyNs) {
  if (smallestLatencyNs <= 0) return {};
  const double limit = clockUncertaintyFactor * smallestLatencyNs;
  if (static_cast<double>(worstUncertaintyNs) <= limit) return {};
  Finding f;
  f.host = "*";
  f.what = clockUncertainty;
  f.value = static_cast<double>(worstUncertaintyNs);
  f.limit = limit;
  f.effect = "the clocks agree only to " + formatNumber(static_cast<double>(worstUncertaintyNs) / 1e3) +
             " us, more than twice the smallest latency measured (one-way p50 " +
             formatNumber(smallestLatencyNs / 1e3) +
             " us): cross-rank timelines (incast arrival, collective arrival order) cannot order events that "
             "close; each sample's own duration is unaffected";
  return {f};
}

namespace {

// /proc/stat's first line: (all jiffies, idle + iowait jiffies); nullopt if unreadable.
std::optional<std::pair<double, double>> cpuJiffies() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return std::nullopt;
  double v[10] = {};
  const int n = std::fscanf(f, "cpu %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                            &v[6], &v[7], &v[8], &v[9]);
  std::fclose(f);
  if (n < 5) return std::nullopt;
  double total = 0;
  for (int i = 0; i < std::min(n, 8); ++i) total += v[i];  // guest time is already in user
  return std::make_pair(total, v[3] + v[4]);
}

}  // namespace

RankFacts readFacts(int rank, const std::string& host, double busyWindowSeconds) {
  RankFacts facts;
  facts.rank = rank;
  facts.host = host;
#if FABSCOPE_SMPI
  // Under SimGrid SMPI every rank is an actor of one simulation process: this
  // machine's identity, CPUs, load and governors are the simulator's, not the
  // simulated host's, and would judge 256 simulated ranks oversubscribed on two
  // real CPUs. Each simulated host is its own machine, with nothing measured.
  (void)busyWindowSeconds;
  facts.machine = "simulated:" + host;
  facts.onlineCpus = 0;
  return facts;
#endif
  // machine-id alone is copied into cloned images; boot_id alone changes nothing
  // between namespaces either: together they name this boot of this machine.
  facts.machine = firstLineOf("/etc/machine-id") + "/" + firstLineOf("/proc/sys/kernel/random/boot_id");
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) facts.cpus.push_back(cpu);
  facts.onlineCpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  // The quietest of a few consecutive parts of the window: work that keeps the
  // CPUs busy shows in every part, a burst (a process starting, a test harness's
  // own step) in one only. One reading of 0.25 s once saw 0.56 CPUs from such a burst.
  constexpr int parts = 3;
  std::vector<std::optional<std::pair<double, double>>> reads;
  reads.push_back(cpuJiffies());
  for (int i = 0; i < parts; ++i) {
    std::this_thread::sleep_for(std::chrono::duration<double>(busyWindowSeconds / parts));
    reads.push_back(cpuJiffies());
  }
  for (std::size_t i = 1; i < reads.size(); ++i) {
    if (!reads[i - 1] || !reads[i]) continue;
    const auto [total0, idle0] = *reads[i - 1];
    const auto [total1, idle1] = *reads[i];
    if (total1 <= total0) continue;
    const double busy = std::max(0.0, 1.0 - (idle1 - idle0) / (total1 - total0)) * facts.onlineCpus;
    facts.otherBusyCpus = facts.otherBusyCpus < 0 ? busy : std::min(facts.otherBusyCpus, busy);
  }
  for (int cpu : facts.cpus)
    facts.governors.push_back(
        firstLineOf("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor"));
  return facts;
}

std::string encode(const RankFacts& f) {
  std::string governors;
  for (std::size_t i = 0; i < f.governors.size(); ++i) governors += (i ? "," : "") + f.governors[i];
  return std::to_string(f.rank) + "\t" + f.host + "\t" + f.machine + "\t" + joined(f.cpus) + "\t" +
         std::to_string(f.onlineCpus) + "\t" + formatNumber(f.otherBusyCpus) + "\t" + governors;
}

RankFacts decode(const std::string& line) {
  const auto fields = split(line, '\t');
  if (fields.size() != 7) throw std::runtime_error("validity facts: expected 7 tab-separated fields in '" + line + "'");
  RankFacts f;
  f.rank = std::stoi(fields[0]);
  f.host = fields[1];
  f.machine = fields[2];
  for (const auto& c : split(fields[3], ','))
    if (!c.empty()) f.cpus.push_back(std::stoi(c));
  f.onlineCpus = std::stoi(fields[4]);
  f.otherBusyCpus = std::stod(fields[5]);
  if (!f.cpus.empty()) f.governors = split(fields[6], ',');
  f.governors.resize(f.cpus.size());
  return f;
}

}  // namespace fabscope::validity
