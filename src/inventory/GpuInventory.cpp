#include "inventory/GpuInventory.hpp"

#include "fabscope/BuildConfig.hpp"
#include "inventory/SysfsFiles.hpp"

#if FABSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fabscope::inventory {

std::string formatCudaVersion(int version) {
  if (version <= 0) return {};
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string noGpuNote(GpuCountFailure failure, int driverVersion, int runtimeVersion, const std::string& cudaText) {
  const std::string runtime = formatCudaVersion(runtimeVersion);
  // CUDA answers "driver version is insufficient" also when there is no driver
  // at all (cudaDriverGetVersion gives 0): that is what the admin needs to hear.
  if (driverVersion <= 0)
    return "cuda: no NVIDIA GPU driver on this host (the CUDA runtime" + (runtime.empty() ? "" : " " + runtime) +
           " is installed, but no driver is loaded): GPUs not listed";
  const std::string driver = formatCudaVersion(driverVersion);
  switch (failure) {
    case GpuCountFailure::insufficientDriver:
      return "cuda: the NVIDIA driver supports CUDA " + driver + ", older than the CUDA runtime " + runtime +
             " fabscope was built with: update the driver; GPUs not listed";
    case GpuCountFailure::noDevice:
      return "cuda: no GPU found (the NVIDIA driver, CUDA " + driver + ", is loaded but sees no device)";
    case GpuCountFailure::other:
      break;
  }
  return "cuda: no GPU visible: " + cudaText;
}

#if FABSCOPE_HAVE_CUDA

GpuQuery queryCudaGpus() {
  GpuQuery query;
  int runtimeVersion = 0;
  if (cudaRuntimeGetVersion(&runtimeVersion) == cudaSuccess)
    query.cudaRuntimeVersion = formatCudaVersion(runtimeVersion);
  int driverVersion = 0;
  // 0 without a driver: that is the answer, not an error.
  if (cudaDriverGetVersion(&driverVersion) == cudaSuccess) query.cudaDriverVersion = formatCudaVersion(driverVersion);
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    const auto failure = rc == cudaErrorInsufficientDriver ? GpuCountFailure::insufficientDriver
                         : rc == cudaErrorNoDevice         ? GpuCountFailure::noDevice
                                                           : GpuCountFailure::other;
    query.notes.push_back(noGpuNote(failure, driverVersion, runtimeVersion, cudaGetErrorString(rc)));
    cudaGetLastError();  // not sticky; clear it so later CUDA calls do not see it
    return query;
  }
  for (int index = 0; index < count; ++index) {
    cudaDeviceProp properties{};
    if (cudaError_t propRc = cudaGetDeviceProperties(&properties, index); propRc != cudaSuccess) {
      query.notes.push_back("cuda: cudaGetDeviceProperties(" + std::to_string(index) +
                            ") failed: " + cudaGetErrorString(propRc));
      continue;
    }
    GpuInfo gpu;
    gpu.index = index;
    gpu.model = properties.name;
    char busId[32] = {};
    if (cudaDeviceGetPCIBusId(busId, sizeof busId, index) == cudaSuccess) gpu.pciAddress = normalisePciAddress(busId);
    query.gpus.push_back(std::move(gpu));
  }
  return query;
}

#else

GpuQuery queryCudaGpus() {
  GpuQuery query;
  query.notes.push_back("cuda: not built with CUDA; GPUs not listed");
  return query;
}

#endif

void locateGpusInSysfs(std::vector<GpuInfo>& gpus, const std::filesystem::path& sysRoot) {
  for (auto& gpu : gpus) {
    if (gpu.pciAddress.empty()) continue;
    const auto device = sysRoot / "bus" / "pci" / "devices" / gpu.pciAddress;
    gpu.devicePath = resolvedDevicePath(device, sysRoot);
    if (gpu.numaNode < 0) gpu.numaNode = static_cast<int>(readInteger(device / "numa_node").value_or(-1));
    if (gpu.numaNode < -1) gpu.numaNode = -1;
  }
}

}  // namespace fabscope::inventory
