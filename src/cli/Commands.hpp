#pragma once
#include <string>
#include <vector>

#include "kinds/SelfTest.hpp"

namespace fabscope::cli {

struct RunCommand {
  std::string scenarioPath;
  std::vector<std::string> overrides;
  std::string outputPath;
  bool overwrite = false;
  bool progress = true;
  bool verdict = true;         // the closing verdict line (ClosingVerdict.hpp)
  bool allowCommands = false;  // --allow-commands: the scenario's own commands may run
  std::string commandLine;
  std::string manifestPath;
  std::string topologyPath;
  suite::SelfTestHooks selfTest;  // --self-test (fabscope's own tests only)
};

struct ListCommand {
  std::string scenarioPath;
  bool scenarioGiven = false;
  std::vector<std::string> overrides;
  int ranks = 0;
  // The layout list assumes for patterns that follow the topology: ranks per
  // node, nodes per leaf, leaves per pod (0: no leaf/pod labels).
  int ranksPerNode = 8;
  int nodesPerLeaf = 0;
  int leavesPerPod = 0;
  // --model: the sizes a serving-impact view of this deployment needs
  // (fabscope_analysis impact); with --scenario also which planned instances measure them.
  std::string model;
  int tp = 8;
  std::vector<int> decodeBatches;
  std::vector<int> promptTokens;
  int blockTokens = 16;
};

// What a launcher (launch/fabscope-mpirun, launch/slurm/fabscope.sbatch) needs
// to know about a run before starting it, read from the arguments and the
// scenario exactly as `fabscope run` reads them; no MPI, nothing measured.
struct LaunchFactsCommand {
  RunCommand run;
  int ranks = 0;  // ranks the launcher will start; 0 = not known yet
};

int runRunCommand(const RunCommand& command, int& argc, char**& argv);
int runLaunchFactsCommand(const LaunchFactsCommand& command);
int runListCommand(const ListCommand& command, int& argc, char**& argv);
int runInventoryCommand(bool json);
// Prints the sizes the serving-impact view of `command.model` needs; returns the exit code.
int printServingNeeds(const ListCommand& command);

}  // namespace fabscope::cli
