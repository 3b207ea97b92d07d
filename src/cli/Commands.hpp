#pragma once
#include <string>
#include <vector>

namespace fabscope::cli {

struct RunCommand {
  std::string scenarioPath;
  std::vector<std::string> overrides;
  std::string outputPath;
  bool overwrite = false;
  bool progress = true;
  std::string commandLine;
  std::string manifestPath;
  std::string topologyPath;
};

struct ListCommand {
  std::string scenarioPath;
  std::vector<std::string> overrides;
  int ranks = 0;
};

int runRunCommand(const RunCommand& command, int& argc, char**& argv);
int runListCommand(const ListCommand& command, int& argc, char**& argv);
int runInventoryCommand(bool json);

}  // namespace fabscope::cli
