#include <mpi.h>

#include <cstdio>

#include "cli/Commands.hpp"
#include "inventory/HostInventory.hpp"
#include "inventory/InventoryFormat.hpp"
#include "runtime/Errors.hpp"
#include "runtime/Mpi.hpp"

namespace fabscope::cli {

int runInventoryCommand(bool json) {
  namespace inv = fabscope::inventory;
  inv::InventoryOptions options;
  options.environment = inv::currentEnvironment();
  // MPI_Get_library_version may be called before MPI_Init: no launcher needed.
  options.mpiLibraryVersion = runtime::mpiLibraryVersion();
  const auto inventory = inv::collectHostInventory(options);
  std::fputs((json ? inv::toJson(inventory) : inv::toText(inventory)).c_str(), stdout);
  return exit_code::ok;
}

}  // namespace fabscope::cli
