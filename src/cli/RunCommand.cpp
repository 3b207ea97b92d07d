#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include "cli/ClosingVerdict.hpp"
#include "cli/Commands.hpp"
#include "driver/Runner.hpp"
#include "runtime/Deadline.hpp"
#include "runtime/Deadlines.hpp"
#include "runtime/MemoryUse.hpp"
#include "runtime/Mpi.hpp"
#include "runtime/Timestamp.hpp"
#include "runtime/Watchdog.hpp"
#include "scenario/Scenario.hpp"

namespace fabscope::cli {
namespace {

// launch/fabscope-mpirun and launch/slurm/fabscope.sbatch look for this at
// the start of a line, followed by the exit code (driver::printResultLine): in
// a fault-tolerant launch the launcher's own status does not carry it (Open
// MPI 4.1 with orte_abort_on_non_zero_status 0 ends 0 even when every rank
// exits 2, and non-zero after a rank was lost on purpose).
constexpr const char* resultMarker = "fabscope: result: exit code";

void reportResult(bool rank0, int code) { driver::printResultLine(rank0, code); }
// How long a victim that survived its own fault waits for the launcher to end it.
constexpr double victimWaitSeconds = 300;
// How long the analysis may take to give the closing verdict.
constexpr double verdictTimeoutSeconds = 120;

std::string defaultOutputName() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char name[64];
  std::strftime(name, sizeof name, "fabscope-%Y%m%d-%H%M%S.h5", &tm);
  return name;
}

// Problems only rank 0 can see (the output path) become everyone's error.
// The result file is always created anew and exclusively (ResultFile uses
// H5F_ACC_EXCL): never written through a symbolic link planted at the path,
// and --overwrite replaces a regular file only (removed first, see below).
std::string checkOutputPath(const std::string& path, bool overwrite) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::error_code ec;
  const auto st = fs::symlink_status(p, ec);
  if (fs::is_symlink(st))
    return path +
           ": is a symbolic link; fabscope writes its result only to a file it creates itself (a link "
           "may point anywhere): remove the link or choose another name";
  if (fs::is_directory(st)) return path + ": is a folder; expected a file name such as results/run.h5";
  if (fs::exists(st) && !overwrite)
    return path + ": the output file already exists; choose another name or pass --overwrite";
  if (fs::exists(st) && !fs::is_regular_file(st))
    return path + ": exists and is not a regular file; --overwrite replaces only a regular file";
  const auto parent = p.parent_path();
  if (!parent.empty() && !fs::is_directory(parent))
    return path + ": the folder '" + parent.string() + "' does not exist";
  return {};
}

// --overwrite: the old regular file goes before the new one is created
// exclusively (checked again here: it may have changed since the first check).
std::string removeForOverwrite(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return {};
  if (!fs::is_regular_file(st))
    return path + ": is no longer a regular file (replaced since the first check); not overwritten";
  if (!fs::remove(path, ec)) return path + ": cannot remove the old file for --overwrite: " + ec.message();
  return {};
}

// What every rank knows before the run starts: the scenario, its plan, the
// fabric inputs and the output path, or the first problem found with them.
struct PreparedRun {
  scenario::Scenario scenario;
  std::vector<driver::PlannedInstance> planned;
  driver::FabricInputs fabric;
  std::string outputPath;
  std::string problem;
};

[[noreturn]] void abortOnRuntimeFailure(const runtime::Communicator& world, const RuntimeFailure& e) {
  std::fprintf(stderr, "fabscope: rank %d: %s\n", world.rank(), e.what());
  runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
}

PreparedRun prepareRun(const RunCommand& command, const runtime::Communicator& world, const suite::Registry& registry,
                       const runtime::Deadline& agreeDeadline) {
  PreparedRun run;
  run.outputPath = command.outputPath;
  try {
    auto rules = registry.scenarioRules(world.size());
    rules.allowCommands = command.allowCommands;
    run.scenario = scenario::loadScenarioFile(command.scenarioPath, command.overrides, rules);
    run.fabric = driver::loadFabricInputs(command.manifestPath, command.topologyPath);
  } catch (const UsageError& e) {
    run.problem = e.what();
  }
  // Every rank takes part in the exchange, also one whose scenario failed: the
  // plan of a pattern that follows the topology needs every rank's place.
  suite::WorldLayout layout;
  try {
    layout = driver::exchangeWorldLayout(world, run.fabric, agreeDeadline);
  } catch (const RuntimeFailure& e) {
    abortOnRuntimeFailure(world, e);
  }
  if (run.problem.empty()) {
    try {
      run.planned = driver::planMatrix(run.scenario, registry, layout);
      runtime::sampleHeapPeak("planning");  // the plans of every instance, held for the whole run
    } catch (const UsageError& e) {
      run.problem = e.what();
    }
  }
  if (world.rank() == 0 && run.problem.empty()) {
    if (run.outputPath.empty()) run.outputPath = defaultOutputName();
    run.problem = checkOutputPath(run.outputPath, command.overwrite);
  }
  // Checks that need every rank's host (a link fault's victim alone on its
  // host), from the layout every rank already holds: checked on rank 0, a
  // bad placement refused like any other bad input.
  if (world.rank() == 0 && run.problem.empty()) {
    try {
      for (const auto& p : run.planned)
        registry.kind(p.instance.spec->kind).checkPlacement(p.instance, layout.hostOfRank);
    } catch (const UsageError& e) {
      run.problem = e.what();
    } catch (const RuntimeFailure& e) {
      abortOnRuntimeFailure(world, e);
    }
  }
  return run;
}

// Every rank learns the output path and whether any rank found a problem; the
// first problem any rank found stops every rank before anything is written
// (returns exit code 2), as does an old file --overwrite cannot remove.
std::optional<int> agreeToStart(const RunCommand& command, const runtime::Communicator& world, PreparedRun& run,
                                const runtime::Deadline& agreeDeadline) {
  const bool rank0 = world.rank() == 0;
  try {
    run.outputPath = world.broadcastString(run.outputPath, 0, agreeDeadline);
    const auto& problem = run.problem;
    const auto problems = world.allreduceMax(problem.empty() ? 0 : 1, agreeDeadline);
    if (problems) {
      const auto rank0Problem = world.broadcastString(problem, 0, agreeDeadline);
      if (rank0)
        std::fprintf(stderr, "fabscope: error: %s\n", (rank0Problem.empty() ? problem : rank0Problem).c_str());
      else if (!problem.empty() && problem != rank0Problem)
        std::fprintf(stderr, "fabscope: error (rank %d): %s\n", world.rank(), problem.c_str());
      reportResult(rank0, exit_code::usage);
      return exit_code::usage;
    }
    if (command.overwrite) {
      const std::string removeProblem =
          world.broadcastString(rank0 ? removeForOverwrite(run.outputPath) : "", 0, agreeDeadline);
      if (!removeProblem.empty()) {
        if (rank0) std::fprintf(stderr, "fabscope: error: %s\n", removeProblem.c_str());
        reportResult(rank0, exit_code::usage);
        return exit_code::usage;
      }
    }
  } catch (const RuntimeFailure& e) {
    abortOnRuntimeFailure(world, e);
  }
  return std::nullopt;
}

// The victim of a fault drill that is still alive (hang, link-down, loss):
// the survivors finish the run without it. Leaving now would end the job
// under Open MPI (a rank that exits without MPI_Finalize aborts the job)
// while they still write; so it waits, bounded, for rank 0 to release it once
// the file is closed (a drill that never really cut it off), or to be ended
// by the launcher once the survivors have left.
[[noreturn]] void victimLeaves(const runtime::LossChannel& losses) {
  std::fflush(nullptr);
  (void)losses.waitForRelease(static_cast<runtime::Nanoseconds>(victimWaitSeconds * 1e9));
  std::_Exit(exit_code::ok);
}

// MPI_Finalize synchronises with every rank, the lost one included, and
// never returns (seen with Open MPI 4.1); a bounded finalize left mpirun
// itself waiting. So the survivors leave without it, together, once rank 0
// has closed the file. The launcher then reports the job as failed (mpirun:
// the victim's signal or the missing finalize), so rank 0 states the real
// result in a line the wrappers read.
[[noreturn]] void survivorsLeave(const driver::Runner& runner, const runtime::LossChannel& losses,
                                 const runtime::Communicator& world, int code) {
  const bool rank0 = world.rank() == 0;
  if (rank0)
    std::printf(
        "%s %d (after a fault drill: %d rank(s) lost on purpose; the launcher's own exit status "
        "reflects that loss)\n",
        resultMarker, code, runner.lostRankCount());
  std::fflush(nullptr);
  if (rank0)
    for (int victim : runner.ranksLeftBehind()) losses.release(victim);
  if (!runner.survivorsDone(runtime::Deadline::afterSeconds(runtime::deadlines::survivorsCloseSeconds)))
    std::fprintf(stderr, "fabscope: rank %d: the other survivors did not all reach the end within 30 s\n",
                 world.rank());
  std::fflush(nullptr);
  std::_Exit(code);
}

int runAndLeave(const RunCommand& command, runtime::Communicator& world, const suite::Registry& registry,
                PreparedRun& prepared, const runtime::Deadline& agreeDeadline) {
  const bool rank0 = world.rank() == 0;
  // Opened before anything can be lost; every control-plane wait watches it.
  runtime::LossChannel losses(world, agreeDeadline);
  world.watchLosses(&losses);
  driver::Runner runner(prepared.scenario, registry, world,
                        {prepared.outputPath, command.commandLine, command.progress, std::move(prepared.fabric),
                         &losses, command.selfTest});
  const int code = runner.run(std::move(prepared.planned));
  runtime::reportMemoryIfAsked(world.rank());
  if (runner.leftRun()) victimLeaves(losses);
  if (runner.lostRanks()) survivorsLeave(runner, losses, world, code);
  // The file is complete and closed (exit 0 or 1): its verdict is the closing line.
  const bool fileComplete = code == exit_code::ok || code == exit_code::checkFailed;
  if (command.verdict && fileComplete) {
    if (rank0) {
      std::printf("%s\n", closingVerdict(prepared.outputPath, verdictTimeoutSeconds).c_str());
      std::fflush(stdout);
    }
    // The other ranks wait here for rank 0's verdict (bounded by its own timeout), not in
    // MPI_Finalize, whose shorter bound would end a job whose analysis is merely slow; and
    // they yield, since nothing is measured any more and the analysis may share their CPUs.
    runtime::setWaitPolicy(runtime::WaitPolicy::yield);
    world.barrier(runtime::Deadline::afterSeconds(verdictTimeoutSeconds + runtime::deadlines::finalizeSeconds));
  }
  if (runner.transfersAbandoned()) {
    // The file is complete and closed; only MPI_Finalize is skipped.
    reportResult(rank0, code);
    std::fflush(nullptr);
    std::_Exit(code);
  }
  reportResult(rank0, code);
  return code;
}

}  // namespace

int runRunCommand(const RunCommand& command, int& argc, char**& argv) {
  runtime::MpiEnvironment mpi(argc, argv);
  auto world = runtime::Communicator::world();
  const bool rank0 = world.rank() == 0;
  {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    runtime::watchdog::start(world.rank(), host);
  }
  const suite::Registry registry;
  const auto agreeDeadline = runtime::Deadline::afterSeconds(runtime::deadlines::setupSeconds);
  auto prepared = prepareRun(command, world, registry, agreeDeadline);
  if (const auto refused = agreeToStart(command, world, prepared, agreeDeadline)) return *refused;
  try {
    return runAndLeave(command, world, registry, prepared, agreeDeadline);
  } catch (const UsageError& e) {
    // Only possible before the file exists (e.g. hdf5=parallel on a serial build).
    if (rank0) std::fprintf(stderr, "fabscope: error: %s\n", e.what());
    reportResult(rank0, exit_code::usage);
    return exit_code::usage;
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "fabscope: %s rank %d: runtime failure: %s\nfabscope: the result file keeps every test "
                 "finished so far and is marked complete=0\n",
                 runtime::utcTimestamp(runtime::realtimeNow()).c_str(), world.rank(), e.what());
    std::fflush(stderr);
    runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
  }
}

}  // namespace fabscope::cli
