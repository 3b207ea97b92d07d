#pragma once
// GPUs through the CUDA runtime (CUDA builds only). A machine without a GPU
// or without a driver reports none, with a note saying why.
#include <filesystem>
#include <string>
#include <vector>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

struct GpuQuery {
  std::vector<GpuInfo> gpus;
  std::string cudaRuntimeVersion;  // "13.0", "" without CUDA
  std::string cudaDriverVersion;   // CUDA version the driver supports, "" without a driver
  std::vector<std::string> notes;
};

GpuQuery queryCudaGpus();

// "13000" style CUDA version numbers -> "13.0".
std::string formatCudaVersion(int version);

// Why the CUDA runtime lists no GPU, in plain words: the driver's CUDA version
// (0: no driver loaded), the runtime's, and what cudaGetDeviceCount said.
enum class GpuCountFailure { insufficientDriver, noDevice, other };
std::string noGpuNote(GpuCountFailure failure, int driverVersion, int runtimeVersion, const std::string& cudaText);

// Fills devicePath and (when still unknown) numaNode from <sys>/bus/pci/devices/<address>.
void locateGpusInSysfs(std::vector<GpuInfo>& gpus, const std::filesystem::path& sysRoot);

}  // namespace fabscope::inventory
