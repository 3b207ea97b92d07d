// The reference fabscope's NCCL all-reduce is held against (issue: busbw
// within 2% from 1 MiB up, small messages within 5%): the plainest loop that
// measures the same thing — one ncclAllReduce per iteration, timed on each
// rank from launch to the stream being idle, the slowest rank's time per
// iteration, the median over iterations. Default NCCL configuration
// (blocking), no deadlines, no recording beyond one array per size.
//
// Usage (one rank per GPU): mpirun -np N nccl_allreduce_reference ITERATIONS WARMUP BYTES...
// REFERENCE_WAIT=query polls cudaStreamQuery instead of cudaStreamSynchronize
// (how fabscope waits, so its deadline can be checked): the difference
// between the two is the cost of waiting by polling.
// Prints one JSON object per size on rank 0.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check(bool ok, const char* what, const char* detail) {
  if (ok) return;
  std::fprintf(stderr, "nccl_allreduce_reference: %s failed: %s\n", what, detail);
  MPI_Abort(MPI_COMM_WORLD, 3);
}
#define CUDA(call)                                         \
  do {                                                     \
    cudaError_t e = (call);                                \
    check(e == cudaSuccess, #call, cudaGetErrorString(e)); \
  } while (0)
#define NCCL(call)                                         \
  do {                                                     \
    ncclResult_t r = (call);                               \
    check(r == ncclSuccess, #call, ncclGetErrorString(r)); \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4) {
    if (rank == 0) std::fprintf(stderr, "usage: nccl_allreduce_reference ITERATIONS WARMUP BYTES...\n");
    MPI_Finalize();
    return 2;
  }
  const int iterations = std::atoi(argv[1]), warmup = std::atoi(argv[2]);
  const char* waitMode = std::getenv("REFERENCE_WAIT");
  const bool pollQuery = waitMode && std::string(waitMode) == "query";
  int devices = 0;
  CUDA(cudaGetDeviceCount(&devices));
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int localRank = 0;
  MPI_Comm_rank(local, &localRank);
  CUDA(cudaSetDevice(localRank % devices));
  ncclUniqueId id;
  if (rank == 0) NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  NCCL(ncclCommInitRank(&comm, size, id, rank));
  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  for (int a = 3; a < argc; ++a) {
    const std::size_t bytes = std::stoull(argv[a]);
    const std::size_t count = bytes / sizeof(float);
    std::vector<float> host(count, static_cast<float>(rank + 1));
    float *send = nullptr, *recv = nullptr;
    CUDA(cudaMalloc(&send, bytes));
    CUDA(cudaMalloc(&recv, bytes));
    CUDA(cudaMemcpy(send, host.data(), bytes, cudaMemcpyHostToDevice));
    std::vector<double> ns(static_cast<std::size_t>(iterations));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < warmup + iterations; ++it) {
      const auto t0 = std::chrono::steady_clock::now();
      NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
      if (pollQuery) {
        cudaError_t state;
        while ((state = cudaStreamQuery(stream)) == cudaErrorNotReady) {
        }
        CUDA(state);
      } else {
        CUDA(cudaStreamSynchronize(stream));
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (it >= warmup)
        ns[static_cast<std::size_t>(it - warmup)] = std::chrono::duration<double, std::nano>(t1 - t0).count();
    }
    CUDA(cudaMemcpy(host.data(), recv, bytes, cudaMemcpyDeviceToHost));
    const float expected = static_cast<float>(size * (size + 1) / 2);
    const bool correct = std::all_of(host.begin(), host.end(), [&](float v) { return v == expected; });
    std::vector<double> slowest(ns.size());
    MPI_Reduce(ns.data(), slowest.data(), iterations, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int allCorrect = 0, mineCorrect = correct ? 1 : 0;
    MPI_Reduce(&mineCorrect, &allCorrect, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::sort(slowest.begin(), slowest.end());
      const double p50 = slowest[slowest.size() / 2];
      const double algbw = static_cast<double>(bytes) / p50;  // bytes per ns = GB/s
      std::printf(
          "{\"bytes\": %zu, \"ranks\": %d, \"p50_ns\": %.1f, \"algbw_gbps\": %.3f, \"busbw_gbps\": %.3f, "
          "\"verified\": %s, \"wait\": \"%s\"}\n",
          bytes, size, p50, algbw, algbw * 2.0 * (size - 1) / size, allCorrect ? "true" : "false",
          pollQuery ? "query" : "sync");
      std::fflush(stdout);
    }
    CUDA(cudaFree(send));
    CUDA(cudaFree(recv));
  }
  NCCL(ncclCommDestroy(comm));
  MPI_Comm_free(&local);
  MPI_Finalize();
  return 0;
}
