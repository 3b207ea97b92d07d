// The reference fabscope is compared with: the smallest honest MPI ping-pong
// and windowed stream, with blocking calls and nothing else around them.
// usage: mpirun -np 2 minimal_mpi latency BYTES ITERS WARMUP
//        mpirun -np 2 minimal_mpi bandwidth BYTES ITERS WARMUP WINDOW [distinct|one]
// Receive buffers as fabscope's `receive_buffers`: distinct (default: a slice per
// message of the window, at most 64 MiB of slices, reused beyond) or one.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

static long long now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 5) {
    if (rank == 0) std::fprintf(stderr, "usage: minimal_mpi latency|bandwidth BYTES ITERS WARMUP [WINDOW]\n");
    MPI_Finalize();
    return 2;
  }
  const std::string mode = argv[1];
  const int bytes = std::atoi(argv[2]), iters = std::atoi(argv[3]), warmup = std::atoi(argv[4]);
  const int window = argc > 5 ? std::atoi(argv[5]) : 1;
  const bool one = argc > 6 && std::string(argv[6]) == "one";
  const size_t maxSlices = std::max<size_t>(1, (size_t{64} << 20) / std::max(bytes, 1));
  const size_t slices = one ? 1 : std::min<size_t>(window, maxSlices);
  std::vector<char> send(bytes, 1), recv(static_cast<size_t>(bytes) * slices);
  std::vector<MPI_Request> reqs(window);
  std::vector<long long> samples;
  samples.reserve(iters);
  const int peer = 1 - rank;
  MPI_Barrier(MPI_COMM_WORLD);
  long long start = 0;
  for (int i = 0; i < warmup + iters; ++i) {
    if (i == warmup) start = now();
    const long long t0 = now();
    if (mode == "latency") {
      if (rank == 0) {
        MPI_Send(send.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(recv.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(recv.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(send.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      }
    } else {
      int ack = 0;
      if (rank == 0) {
        for (int w = 0; w < window; ++w) MPI_Isend(send.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[w]);
        MPI_Waitall(window, reqs.data(), MPI_STATUSES_IGNORE);
        MPI_Recv(&ack, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        for (int w = 0; w < window; ++w)
          MPI_Irecv(recv.data() + (static_cast<size_t>(w) % slices) * bytes, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                    &reqs[w]);
        MPI_Waitall(window, reqs.data(), MPI_STATUSES_IGNORE);
        MPI_Send(&ack, 1, MPI_INT, peer, 2, MPI_COMM_WORLD);
      }
    }
    if (i >= warmup) samples.push_back(now() - t0);
  }
  const long long total = now() - start;
  if (rank == 0) {
    std::sort(samples.begin(), samples.end());
    if (mode == "latency")
      std::printf("p50_ns %.1f\n", samples[samples.size() / 2] / 2.0);
    else
      std::printf("gbps %.4f\n", static_cast<double>(bytes) * window * iters / static_cast<double>(total));
  }
  MPI_Finalize();
  return 0;
}
