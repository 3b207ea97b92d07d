#include <cstdio>

#include "cli/Commands.hpp"
#include "runtime/Errors.hpp"

namespace fabscope::cli {

int runInventoryCommand(bool json) {
  (void)json;
  std::fprintf(stderr, "fabscope: the inventory command is not part of this build yet\n");
  return exit_code::usage;
}

}  // namespace fabscope::cli
