#pragma once
// Functions marked FABSCOPE_HD compile for the host and, under nvcc, for the
// GPU as well, so the host and CUDA kernels share one definition of every
// pattern and checksum (a mismatch between them would be a false alarm).
#if defined(__CUDACC__)
#define FABSCOPE_HD __host__ __device__
#else
#define FABSCOPE_HD
#endif
