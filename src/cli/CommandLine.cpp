#include "cli/CommandLine.hpp"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/Commands.hpp"
#include "fabscope/BuildConfig.hpp"
#include "kinds/SelfTest.hpp"
#include "quickcheck/Quickcheck.hpp"
#include "runtime/Errors.hpp"

namespace po = boost::program_options;

namespace fabscope::cli {
namespace {

const char* const overview = R"(fabscope - does this whole fabric meet the latency LLM serving needs?

Runs a test matrix (point-to-point latency and bandwidth, ...) on every MPI rank
and writes every rank's raw timing samples into one shared HDF5 file. Start it
once across the cluster with mpirun or srun.

Usage:
  fabscope run --scenario FILE [--output FILE.h5] [--set key=value]...
  fabscope list --scenario FILE [--ranks N] [--set key=value]...
  fabscope list --model PRESET [--tp N] [--decode-batch B...] [--prompt TOKENS...] [--scenario FILE]
  fabscope inventory [--json]
  fabscope quickcheck [--manifest FILE] [--slurm-drain] [--verbose]
  fabscope --version
  fabscope --help | fabscope COMMAND --help

Commands:
  run        measure the scenario's tests and write the result file
  list       print the expanded test matrix (nothing is measured)
  inventory  print what this host's fabric is (adapters, interfaces, versions)
  quickcheck node health check for Slurm's HealthCheckProgram or NHC: exit 0 when
             healthy, else exit 1 and one line saying what is wrong (docs/quickcheck.md)

Examples:
  mpirun -np 4 build/fabscope run --scenario scenarios/smoke.yaml --output results/smoke.h5
  mpirun -np 4 build/fabscope run --scenario scenarios/smoke.yaml --output r.h5 --set iterations=50
  build/fabscope list --scenario scenarios/smoke.yaml --ranks 16

Exit codes:
  0  everything ran and passed its checks
  1  a check failed (wrong data, a deadline missed)
  2  bad usage or scenario: nothing was measured and no result file was written
  3  runtime failure (e.g. a rank was lost): the partial file is kept, marked complete=0

The result file layout is documented in docs/file-format.md; the analysis
package is run with `python3 -m fabscope_analysis summary FILE`.
)";

po::options_description scenarioOptions() {
  po::options_description d("Scenario options");
  d.add_options()("scenario,s", po::value<std::string>()->value_name("FILE"),
                  "scenario file (YAML) listing the tests, sizes, iterations, timeouts and transports; "
                  "default: scenarios/smoke.yaml of this source tree")(
      "set", po::value<std::vector<std::string>>()->value_name("KEY=VALUE")->composing(),
      "override a scenario value; repeatable. KEY is a test key for every test (iterations=50, "
      "sizes=[8,4KiB], timeout=10s, transport=mpi) or TEST.KEY for one test (p2p-latency.iterations=10), "
      "or a run-level key: seed=N, hdf5=auto|parallel|serial");
  return d;
}

// FABSCOPE_CLOSING_VERDICT=off (or 0) is --no-verdict for every run of a shell or
// module, e.g. where compute nodes have no Python analysis; on, 1 or unset keep it.
bool closingVerdictWanted() {
  const char* v = std::getenv("FABSCOPE_CLOSING_VERDICT");
  if (!v || !*v) return true;
  const std::string value(v);
  if (value == "off" || value == "0") return false;
  if (value == "on" || value == "1") return true;
  throw UsageError("FABSCOPE_CLOSING_VERDICT is '" + value + "': expected off, 0, on or 1");
}

std::string defaultScenario() {
  const std::filesystem::path p = std::filesystem::path(FABSCOPE_SOURCE_DIR) / "scenarios" / "smoke.yaml";
  return p.string();
}

std::string joinCommandLine(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) out += (i ? " " : "") + std::string(argv[i]);
  return out;
}

// `fabscope run`'s options; the self-test hooks under a heading of their own.
po::options_description runOptions() {
  po::options_description opts("fabscope run");
  opts.add(scenarioOptions())
      .add_options()(
          "output,o", po::value<std::string>()->value_name("FILE.h5"),
          "result file (HDF5) written by all ranks together; default fabscope-<UTC time>.h5 in the current folder")(
          "overwrite", "replace the output file if it exists (without it, an existing file is an error)")(
          "no-progress", "do not print progress lines on stderr")(
          "allow-commands",
          "let the scenario file's own commands run (a fault drill's fault_command and "
          "restore_command); without it such a scenario is refused (exit 2). 'fabscope list' shows "
          "them first; a command given with --set is always allowed")(
          "no-verdict",
          "do not end with the verdict line (it runs python3 -m fabscope_analysis verdict on the "
          "file: the same verdict summary, report and accept give); "
          "FABSCOPE_CLOSING_VERDICT=off in the environment does the same")(
          "manifest", po::value<std::string>()->value_name("FILE"),
          "YAML description of the intended fabric (protocol, rate, MTU, adapters, firmware, software versions); "
          "a must-match difference makes the run exit 1 (see docs/inventory.md)")(
          "topology", po::value<std::string>()->value_name("FILE"),
          "YAML map host -> site, pod, leaf; default: SLURM_TOPOLOGY_ADDR when set")(
          "launch-facts", po::value<int>()->value_name("RANKS"),
          "for launchers: measure nothing, start no MPI; load the scenario for RANKS ranks (0: not known) and "
          "print 'launch-facts: output=FILE' (empty when not given) and 'launch-facts: fault_drill=0|1'");
  po::options_description selfTest("Self-test options (for fabscope's own tests)");
  selfTest.add_options()("self-test", po::value<std::vector<std::string>>()->value_name("HOOK")->composing(),
                         suite::selfTestHelp);
  opts.add(selfTest);
  return opts;
}

// The run command of parsed options; throws UsageError for a bad --self-test.
RunCommand runCommandOf(const po::variables_map& vm, int argc, char** argv) {
  RunCommand c;
  c.scenarioPath = vm.count("scenario") ? vm["scenario"].as<std::string>() : defaultScenario();
  if (vm.count("set")) c.overrides = vm["set"].as<std::vector<std::string>>();
  c.outputPath = vm.count("output") ? vm["output"].as<std::string>() : "";
  c.overwrite = vm.count("overwrite") > 0;
  c.progress = vm.count("no-progress") == 0;
  // Under SimGrid SMPI the verdict's child process runs on real time while its
  // 120 s bound is read on the simulated clock: it is left to the caller there.
  c.verdict = vm.count("no-verdict") == 0 && closingVerdictWanted() && !FABSCOPE_SMPI;
  c.allowCommands = vm.count("allow-commands") > 0;
  if (vm.count("manifest")) c.manifestPath = vm["manifest"].as<std::string>();
  if (vm.count("topology")) c.topologyPath = vm["topology"].as<std::string>();
  if (vm.count("self-test")) c.selfTest = suite::parseSelfTestHooks(vm["self-test"].as<std::vector<std::string>>());
  c.commandLine = joinCommandLine(argc, argv);
  return c;
}

int commandHelp(const po::options_description& options, const char* usage, const char* example) {
  std::cout << "Usage: " << usage << "\n\n" << options << "\nExample:\n  " << example << "\n";
  return exit_code::ok;
}

// Adds --help to the command's options and parses what follows the command word.
po::variables_map parseCommand(po::options_description& opts, int argc, char** argv) {
  po::options_description common("General options");
  common.add_options()("help,h", "show this help");
  opts.add(common);
  po::variables_map vm;
  po::store(po::command_line_parser(argc - 1, argv + 1).options(opts).run(), vm);
  po::notify(vm);
  return vm;
}

// A command's settings read from its options; a UsageError is printed here
// and leaves it empty (the caller exits 2).
template <class Read>
auto readOrRefuse(Read read) -> std::optional<decltype(read())> {
  try {
    return read();
  } catch (const UsageError& e) {
    std::cerr << "fabscope: error: " << e.what() << "\n";
    return std::nullopt;
  }
}

int printVersion() {
  std::cout << "fabscope " << FABSCOPE_VERSION << " (HDF5 " << (FABSCOPE_HDF5_PARALLEL ? "parallel" : "serial")
            << ", CUDA " << (FABSCOPE_HAVE_CUDA ? "on" : "off") << ", NCCL " << (FABSCOPE_HAVE_NCCL ? "on" : "off")
            << ", UCX " << (FABSCOPE_HAVE_UCX ? "on" : "off") << ", verbs " << (FABSCOPE_HAVE_VERBS ? "on" : "off")
            << ")\n";
  return exit_code::ok;
}

int runCommandWord(int argc, char** argv) {
  po::options_description opts = runOptions();
  const auto vm = parseCommand(opts, argc, argv);
  if (vm.count("help"))
    return commandHelp(opts, "fabscope run --scenario FILE [--output FILE.h5] [--set KEY=VALUE]...",
                       "mpirun -np 4 fabscope run --scenario scenarios/smoke.yaml --output results/smoke.h5");
  const auto c = readOrRefuse([&] { return runCommandOf(vm, argc, argv); });
  if (!c) return exit_code::usage;
  if (vm.count("launch-facts")) return runLaunchFactsCommand({.run = *c, .ranks = vm["launch-facts"].as<int>()});
  return runRunCommand(*c, argc, argv);
}

po::options_description listOptions() {
  po::options_description opts("fabscope list");
  opts.add(scenarioOptions())
      .add_options()("ranks,n", po::value<int>()->value_name("N"),
                     "plan for N ranks instead of the number this command was started with")(
          "ranks-per-node", po::value<int>()->value_name("N")->default_value(8),
          "the layout assumed for patterns that follow the topology: N ranks to a node, in rank order")(
          "nodes-per-leaf", po::value<int>()->value_name("N")->default_value(0),
          "... N nodes to a leaf switch (0: no leaf labels, as a run without --topology)")(
          "leaves-per-pod", po::value<int>()->value_name("N")->default_value(0),
          "... N leaves to a pod (0: no pod labels)")(
          "model", po::value<std::string>()->value_name("PRESET"),
          "print the sizes a serving-impact view of this model needs (python3 -m fabscope_analysis "
          "impact); with --scenario, also which planned instances measure them")(
          "tp", po::value<int>()->value_name("N")->default_value(8), "tensor parallelism (with --model)")(
          "decode-batch", po::value<std::vector<int>>()->value_name("B")->multitoken(),
          "decode batch sizes (with --model; default 1 32)")(
          "prompt", po::value<std::vector<int>>()->value_name("TOKENS")->multitoken(),
          "prompt lengths whose KV moves (with --model; default 2048 8192)")(
          "block-tokens", po::value<int>()->value_name("N")->default_value(16), "tokens per KV block (with --model)");
  return opts;
}

// The list command of parsed options; throws UsageError for a bad layout.
ListCommand listCommandOf(const po::variables_map& vm) {
  ListCommand c;
  c.scenarioGiven = vm.count("scenario") > 0;
  c.scenarioPath = c.scenarioGiven ? vm["scenario"].as<std::string>() : defaultScenario();
  if (vm.count("set")) c.overrides = vm["set"].as<std::vector<std::string>>();
  c.ranks = vm.count("ranks") ? vm["ranks"].as<int>() : 0;
  c.ranksPerNode = vm["ranks-per-node"].as<int>();
  c.nodesPerLeaf = vm["nodes-per-leaf"].as<int>();
  c.leavesPerPod = vm["leaves-per-pod"].as<int>();
  if (c.ranksPerNode < 1 || c.nodesPerLeaf < 0 || c.leavesPerPod < 0)
    throw UsageError("--ranks-per-node must be at least 1, --nodes-per-leaf and --leaves-per-pod at least 0");
  if (vm.count("model")) {
    c.model = vm["model"].as<std::string>();
    c.tp = vm["tp"].as<int>();
    c.blockTokens = vm["block-tokens"].as<int>();
    c.decodeBatches = vm.count("decode-batch") ? vm["decode-batch"].as<std::vector<int>>() : std::vector<int>{1, 32};
    c.promptTokens = vm.count("prompt") ? vm["prompt"].as<std::vector<int>>() : std::vector<int>{2048, 8192};
  }
  return c;
}

int listCommandWord(int argc, char** argv) {
  po::options_description opts = listOptions();
  const auto vm = parseCommand(opts, argc, argv);
  if (vm.count("help"))
    return commandHelp(opts, "fabscope list --scenario FILE [--ranks N] [--set KEY=VALUE]...",
                       "fabscope list --scenario scenarios/smoke.yaml --ranks 16");
  const auto c = listCommandOf(vm);
  // Sizes alone need no MPI and no scenario.
  if (vm.count("model") && !c.scenarioGiven) return printServingNeeds(c);
  return runListCommand(c, argc, argv);
}

int inventoryCommandWord(int argc, char** argv) {
  po::options_description opts("fabscope inventory");
  opts.add_options()("json", "print JSON instead of text");
  const auto vm = parseCommand(opts, argc, argv);
  if (vm.count("help"))
    return commandHelp(opts, "fabscope inventory [--json]", "fabscope inventory --json > host.json");
  return runInventoryCommand(vm.count("json") > 0);
}

int quickcheckCommandWord(int argc, char** argv) {
  po::options_description opts = quickcheck::quickcheckOptionsDescription();
  const auto vm = parseCommand(opts, argc, argv);
  if (vm.count("help"))
    return commandHelp(opts, "fabscope quickcheck [--manifest FILE] [--state-dir DIR] [--slurm-drain] [OPTION]...",
                       "fabscope quickcheck --manifest /etc/fabscope/manifest.yaml --slurm-drain --verbose");
  const auto c = readOrRefuse([&] { return quickcheck::quickcheckOptionsOf(vm); });
  if (!c) return exit_code::usage;
  if (vm.count("loop-worker")) return quickcheck::runQuickcheckLoopWorker(c->loop, c->timeLimitSeconds, argc, argv);
  return quickcheck::runQuickcheckCommand(*c);
}

}  // namespace

int runCommandLine(int argc, char** argv) {
  try {
    if (argc < 2) {
      std::cerr << overview;
      return exit_code::usage;
    }
    const std::string command = argv[1];
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << overview;
      return exit_code::ok;
    }
    if (command == "--version" || command == "-V") return printVersion();
    if (command == "run") return runCommandWord(argc, argv);
    if (command == "list") return listCommandWord(argc, argv);
    if (command == "inventory") return inventoryCommandWord(argc, argv);
    if (command == "quickcheck") return quickcheckCommandWord(argc, argv);
    std::cerr << "fabscope: unknown command '" << command
              << "'; expected run, list, inventory, quickcheck, --help or --version\n";
    return exit_code::usage;
  } catch (const po::error& e) {
    std::cerr << "fabscope: " << e.what() << " (see fabscope --help)\n";
    return exit_code::usage;
  }
}

}  // namespace fabscope::cli
