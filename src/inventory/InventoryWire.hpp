#pragma once
// A HostInventory as one byte string, so ranks can gather their hosts'
// inventories (MPI_Gatherv of chars) and rank 0 can run checkConsistency and
// checkManifest over all hosts. Exact round trip; not a file format (the
// stored form is toKeyValues()).
#include <string>
#include <string_view>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

std::string serializeInventory(const HostInventory& inventory);

// Throws std::runtime_error when `bytes` is not a serializeInventory() result.
HostInventory deserializeInventory(std::string_view bytes);

}  // namespace fabscope::inventory
