#pragma once
// Versions of the software between the application and the wire.
#include <filesystem>
#include <string>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

// UCX, NCCL, kernel, OS and NVIDIA kernel driver; MPI from the given text
// (first line of MPI_Get_library_version, so MPI need not be initialised here).
// CUDA runtime/driver versions are filled by the GPU query.
SoftwareVersions readSoftwareVersions(const std::string& mpiLibraryVersion, const std::filesystem::path& sysRoot,
                                      const std::filesystem::path& osReleasePath);

// PRETTY_NAME of an os-release file, unquoted; "" when absent.
std::string readOsPrettyName(const std::filesystem::path& osReleasePath);

// 22803 -> "2.28.3" (NCCL >= 2.9 encodes major*10000 + minor*100 + patch).
std::string formatNcclVersion(int code);

}  // namespace fabscope::inventory
