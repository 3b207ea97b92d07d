#pragma once
// Internal to kernels/cuda and GPU tests: turns a failing CUDA runtime call
// into CudaError naming the call, the error and the source position.
#include <cuda_runtime.h>

#include <string>

#include "cuda/CudaApi.hpp"

namespace fabscope::kernels::cuda::detail {

[[noreturn]] inline void throwCudaError(cudaError_t status, const char* call, const char* file, int line) {
  // The runtime also records a non-sticky failure as the thread's "last
  // error"; clear it so a later launch check does not report it again.
  (void)cudaGetLastError();
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                  ") at " + file + ":" + std::to_string(line));
}

}  // namespace fabscope::kernels::cuda::detail

#define FABSCOPE_CUDA_CHECK(call)                                                                          \
  do {                                                                                                     \
    const cudaError_t fabscope_cuda_status_ = (call);                                                      \
    if (fabscope_cuda_status_ != cudaSuccess)                                                              \
      ::fabscope::kernels::cuda::detail::throwCudaError(fabscope_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch errors surface (and are cleared) here.
#define FABSCOPE_CUDA_CHECK_LAUNCH(what)                                                                \
  do {                                                                                                  \
    const cudaError_t fabscope_cuda_status_ = cudaGetLastError();                                       \
    if (fabscope_cuda_status_ != cudaSuccess)                                                           \
      ::fabscope::kernels::cuda::detail::throwCudaError(                                                \
          fabscope_cuda_status_, (std::string("kernel launch ") + (what)).c_str(), __FILE__, __LINE__); \
  } while (0)
