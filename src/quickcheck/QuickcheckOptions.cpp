// `fabscope quickcheck`'s command line, parsed into QuickcheckOptions; every
// bad value names its option and what was expected.
#include <boost/program_options.hpp>
#include <sstream>

#include "quickcheck/Quickcheck.hpp"
#include "runtime/Errors.hpp"
#include "scenario/Units.hpp"
#include "transport/TransportFactory.hpp"

namespace po = boost::program_options;

namespace fabscope::quickcheck {

po::options_description quickcheckOptionsDescription() {
  po::options_description checks("fabscope quickcheck");
  checks.add_options()(
      "manifest", po::value<std::string>()->value_name("FILE"),
      "YAML description of the intended fabric (docs/inventory.md); a must-match difference is a problem")(
      "rdma-rate", po::value<double>()->value_name("GBPS"),
      "every RDMA port must be ACTIVE at this rate (Gb/s) at least; default: the manifest's fabric rate_gbps")(
      "require-rdma", "no RDMA device is a problem (implied by a manifest whose fabric protocol is ib or roce)")(
      "gpu-nic-affinity", po::value<std::string>()->value_name("CLASS")->default_value("NODE"),
      "worst distance allowed between a GPU and its nearest NIC: PIX, PXB, PHB, NODE or SYS (SYS: not checked)")(
      "state-dir", po::value<std::string>()->value_name("DIR"),
      "where the error counters of the last pass are kept (created 0700; refused when a symbolic link, "
      "writable by group or others, or owned by another user); default /run/fabscope-quickcheck for root, "
      "else $XDG_RUNTIME_DIR/fabscope-quickcheck or /tmp/fabscope-quickcheck-UID")(
      "no-counters", "do not compare error counters with the last pass")(
      "interface", po::value<std::vector<std::string>>()->value_name("NAME")->composing(),
      "interface whose error counters count (repeatable); default every interface but lo, and every RDMA port")(
      "ignore-counter", po::value<std::vector<std::string>>()->value_name("NAME")->composing(),
      "error counter not to judge, e.g. symbol_error (repeatable)")(
      "counter-tolerance", po::value<long long>()->value_name("N")->default_value(0),
      "increase allowed per error counter between two passes")("no-loop",
                                                               "skip the intra-node latency and bandwidth loop")(
      "loop-transport", po::value<std::string>()->value_name("NAME")->default_value("mpi"),
      "data path of the loop (mpi, ucx, ... as built; see fabscope --version)")(
      "max-latency-us", po::value<double>()->value_name("US")->default_value(100),
      "median one-way 8-byte latency between 2 local ranks allowed, microseconds")(
      "min-bandwidth-gbs", po::value<double>()->value_name("GBS")->default_value(0.5),
      "bandwidth between 2 local ranks required, GB/s (10^9 bytes per second)")(
      "loop-iterations", po::value<int>()->value_name("N")->default_value(2000), "ping-pongs of the latency loop")(
      "loop-bytes", po::value<std::string>()->value_name("SIZE")->default_value("1MiB"),
      "message size of the bandwidth loop (4KiB, 1MiB, ...)")(
      "loop-window", po::value<int>()->value_name("N")->default_value(16), "messages in flight in the bandwidth loop")(
      "loop-rounds", po::value<int>()->value_name("N")->default_value(30), "windows of the bandwidth loop")(
      "mpirun", po::value<std::string>()->value_name("PATH"),
      "mpirun that starts the loop's 2 ranks; default mpirun from PATH, else /usr/bin/mpirun")(
      "time-limit", po::value<std::string>()->value_name("DURATION")->default_value("45s"),
      "the whole check ends within this (30s, 1m); the loop gets what is left")(
      "report", po::value<std::string>()->value_name("FILE"),
      "also write every check's outcome as JSON to FILE (replaced atomically)")(
      "verbose,v", "print every check's outcome on stderr")(
      "slurm-drain",
      "on a problem run 'scontrol update nodename=NODE state=drain reason=LINE'; when healthy "
      "resume NODE if its drain reason starts with 'fabscope:' (a drain set by others is left alone)")(
      "slurm-node", po::value<std::string>()->value_name("NODE"),
      "Slurm node name (default $SLURMD_NODENAME, else the short host name)")(
      "scontrol", po::value<std::string>()->value_name("PATH"),
      "scontrol to run (default from PATH, else /usr/bin/scontrol)");
  po::options_description internal("Internal options (for fabscope itself and its tests)");
  internal.add_options()("loop-worker", "be one rank of the loop (quickcheck starts these itself under mpirun)")(
      "sys-root", po::value<std::string>()->value_name("DIR"), "read this tree instead of /sys (tests)");
  checks.add(internal);
  return checks;
}

namespace {

template <typename T>
T positive(const po::variables_map& vm, const char* name) {
  const T value = vm[name].as<T>();
  if (!(value > 0)) {
    std::ostringstream text;
    text << "--" << name << ": " << value << " is not allowed; expected a number above 0";
    throw UsageError(text.str());
  }
  return value;
}

}  // namespace

QuickcheckOptions quickcheckOptionsOf(const po::variables_map& vm) {
  QuickcheckOptions o;
  if (vm.count("manifest")) o.manifestPath = vm["manifest"].as<std::string>();
  if (vm.count("rdma-rate")) o.rdmaRateGbps = positive<double>(vm, "rdma-rate");
  o.requireRdma = vm.count("require-rdma") > 0;
  o.affinityLimit = parseAffinityLimit(vm["gpu-nic-affinity"].as<std::string>());
  if (vm.count("state-dir")) {
    o.stateDir = vm["state-dir"].as<std::string>();
    if (o.stateDir.empty()) throw UsageError("--state-dir: expected a directory, got ''");
  }
  o.counters = vm.count("no-counters") == 0;
  if (vm.count("interface")) o.interfaces = vm["interface"].as<std::vector<std::string>>();
  if (vm.count("ignore-counter")) o.ignoreCounters = vm["ignore-counter"].as<std::vector<std::string>>();
  for (const auto& name : o.ignoreCounters)
    if (!isErrorCounter(name))
      throw UsageError("--ignore-counter: '" + name +
                       "' is not one of the error counters quickcheck judges (docs/quickcheck.md lists them)");
  o.counterTolerance = vm["counter-tolerance"].as<long long>();
  if (o.counterTolerance < 0)
    throw UsageError("--counter-tolerance: expected 0 or more, got " + std::to_string(o.counterTolerance));

  LoopSettings& l = o.loop;
  l.enabled = vm.count("no-loop") == 0;
  l.transport = vm["loop-transport"].as<std::string>();
  const auto available = transport::transportAvailability();
  const auto found = available.find(l.transport);
  if (found == available.end()) {
    std::string names;
    for (const auto& [name, why] : available) names += (names.empty() ? "" : ", ") + name;
    throw UsageError("--loop-transport: unknown transport '" + l.transport + "'; expected one of " + names);
  }
  if (!found->second.empty())
    throw UsageError("--loop-transport: '" + l.transport + "' is not usable: " + found->second);
  l.maxLatencyUs = positive<double>(vm, "max-latency-us");
  l.minBandwidthGBps = positive<double>(vm, "min-bandwidth-gbs");
  l.latencyIterations = positive<int>(vm, "loop-iterations");
  l.bandwidthWindow = positive<int>(vm, "loop-window");
  l.bandwidthRounds = positive<int>(vm, "loop-rounds");
  const std::string bytes = vm["loop-bytes"].as<std::string>();
  try {
    l.bandwidthBytes = scenario::parseSize(bytes);
  } catch (const std::exception& e) {
    throw UsageError("--loop-bytes: " + std::string(e.what()));
  }
  if (l.bandwidthBytes < 1 || l.bandwidthBytes * l.bandwidthWindow > (std::int64_t{1} << 30))
    throw UsageError("--loop-bytes " + bytes + " x --loop-window " + std::to_string(l.bandwidthWindow) +
                     ": expected at least 1 byte and at most 1GiB in flight");
  if (vm.count("mpirun")) l.mpirun = vm["mpirun"].as<std::string>();
  const std::string limit = vm["time-limit"].as<std::string>();
  try {
    o.timeLimitSeconds = scenario::parseDurationSeconds(limit);
  } catch (const std::exception& e) {
    throw UsageError("--time-limit: " + std::string(e.what()));
  }
  if (!(o.timeLimitSeconds > 0) || o.timeLimitSeconds > 3600)
    throw UsageError("--time-limit: '" + limit + "' is not allowed; expected more than 0 and at most 1h");
  if (vm.count("report")) o.reportPath = vm["report"].as<std::string>();
  o.verbose = vm.count("verbose") > 0;
  o.slurmDrain = vm.count("slurm-drain") > 0;
  if (vm.count("slurm-node")) o.slurmNode = vm["slurm-node"].as<std::string>();
  if (vm.count("scontrol")) o.scontrol = vm["scontrol"].as<std::string>();
  if ((vm.count("slurm-node") || vm.count("scontrol")) && !o.slurmDrain)
    throw UsageError("--slurm-node and --scontrol only mean something with --slurm-drain");
  if (vm.count("sys-root")) o.sysRoot = vm["sys-root"].as<std::string>();
  return o;
}

QuickcheckOptions parseQuickcheckArguments(const std::vector<std::string>& args) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(quickcheckOptionsDescription()).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return quickcheckOptionsOf(vm);
}

}  // namespace fabscope::quickcheck
