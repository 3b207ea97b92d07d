// The reference fabscope is compared with: the smallest honest MPI ping-pong
// and windowed stream, with blocking calls and nothing else around them. The
// latency-polled modes wait the way fabscope must (MPI_Test loops, which a
// deadline can end) without anything else of fabscope: they split the gap
// between fabscope and the blocking ping-pong into MPI's part and fabscope's.
// usage: mpirun -np 2 minimal_mpi latency BYTES ITERS WARMUP
//        mpirun -np 2 minimal_mpi latency-polled BYTES ITERS WARMUP
//        mpirun -np 2 minimal_mpi latency-polled-nbc BYTES ITERS WARMUP
//        mpirun -np 2 minimal_mpi latency-send-polled BYTES ITERS WARMUP
//        mpirun -np 2 minimal_mpi latency-persistent BYTES ITERS WARMUP
//        mpirun -np 2 minimal_mpi latency-nbc|latency-io|latency-nbc-io|latency-io-closed BYTES ITERS WARMUP
//        mpirun -np 2 minimal_mpi bandwidth BYTES ITERS WARMUP WINDOW [distinct|one]
// latency-send-polled (blocking MPI_Send, the receive polled) and latency-persistent
// (MPI_Send_init/MPI_Recv_init started each round, polled) split the polled gap
// further: Open MPI's blocking send of a small message goes out inline without a
// request, and a persistent request saves the request's allocation.
// latency-nbc, latency-io and latency-nbc-io are the blocking ping-pong with what
// fabscope's process has around its loop: libnbc's progress (one non-blocking
// collective done before), and an MPI-IO file held open, as fabscope's result
// file is with `hdf5: parallel`.
// latency-io-closed opens, writes and closes that file before the loop: on the GPU
// machine the cost stays for the process's life (docs/benchmarks.md), which is why
// fabscope's default result file does not use MPI-IO at all.
// Receive buffers as fabscope's `receive_buffers`: distinct (default: a slice per
// message of the window, at most 64 MiB of slices, reused beyond) or one.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

// Polls one request to completion with MPI_Test, as any wait with a deadline
// must (a blocking MPI_Recv cannot be given up on); no deadline is checked here.
static void poll(MPI_Request* r) {
  int done = 0;
  while (!done) MPI_Test(r, &done, MPI_STATUS_IGNORE);
}

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
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: minimal_mpi "
                   "latency|latency-nbc|latency-io|latency-nbc-io|latency-io-closed|latency-polled|latency-polled-nbc|"
                   "latency-send-polled|latency-persistent|bandwidth BYTES ITERS WARMUP [WINDOW]\n");
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
  const bool withNbc = mode == "latency-polled-nbc" || mode == "latency-nbc" || mode == "latency-nbc-io";
  const bool closeIo = mode == "latency-io-closed";
  const bool withIo = mode == "latency-io" || mode == "latency-nbc-io" || closeIo;
  const std::string base = (mode == "latency-nbc" || withIo) ? "latency" : mode;
  MPI_File file = MPI_FILE_NULL;
  if (withIo) {
    // Created and written through MPI-IO, as HDF5 does (each rank a block), and kept
    // open unless closeIo.
    // mkstemp's template: the fixed prefix, then six characters it replaces.
    char path[64];
    std::snprintf(path, sizeof path, "/tmp/fabscope-minimal-io.%s", std::string(6, 'X').c_str());
    if (rank == 0 && mkstemp(path) < 0) path[0] = 0;
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (!path[0] || MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                                  &file) != MPI_SUCCESS) {
      if (rank == 0) std::fprintf(stderr, "minimal_mpi: could not open an MPI-IO file in /tmp\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int block[256] = {rank};
    MPI_File_write_at_all(file, static_cast<MPI_Offset>(rank) * sizeof block, block, 256, MPI_INT, MPI_STATUS_IGNORE);
    if (closeIo) MPI_File_close(&file);
  }
  if (withNbc) {
    // One non-blocking collective, finished before the loop: from then on Open MPI
    // 4.1 calls libnbc's progress function in every poll (fabscope agrees on its
    // plan with non-blocking collectives, so its polls pay the same).
    int one = 1, sum = 0;
    MPI_Request r;
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  const bool polled = mode.rfind("latency-polled", 0) == 0;
  MPI_Barrier(MPI_COMM_WORLD);
  long long start = 0;
  for (int i = 0; i < warmup + iters; ++i) {
    if (i == warmup) start = now();
    const long long t0 = now();
    if (polled) {
      // fabscope's ping-pong path without fabscope: receive pre-posted, MPI_Isend,
      // MPI_Test loops. Its difference from "latency" is the price of waits that
      // can end at a deadline, not fabscope's own overhead.
      MPI_Request s;
      if (i == 0) MPI_Irecv(recv.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[0]);
      if (rank == 0) {
        MPI_Isend(send.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &s);
        poll(&reqs[0]);
        poll(&s);
        if (i + 1 < warmup + iters) MPI_Irecv(recv.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[0]);
      } else {
        poll(&reqs[0]);
        MPI_Isend(send.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &s);
        if (i + 1 < warmup + iters) MPI_Irecv(recv.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[0]);
        poll(&s);
      }
    } else if (mode == "latency-send-polled") {
      if (i == 0) MPI_Irecv(recv.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[0]);
      const bool more = i + 1 < warmup + iters;
      if (rank == 0) {
        MPI_Send(send.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        poll(&reqs[0]);
        if (more) MPI_Irecv(recv.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[0]);
      } else {
        poll(&reqs[0]);
        MPI_Send(send.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        if (more) MPI_Irecv(recv.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &reqs[0]);
      }
    } else if (mode == "latency-persistent") {
      static MPI_Request ps = MPI_REQUEST_NULL, pr = MPI_REQUEST_NULL;
      if (i == 0) {
        MPI_Send_init(send.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &ps);
        MPI_Recv_init(recv.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &pr);
        MPI_Start(&pr);
      }
      const bool more = i + 1 < warmup + iters;
      if (rank == 0) {
        MPI_Start(&ps);
        poll(&pr);
        poll(&ps);
        if (more) MPI_Start(&pr);
      } else {
        poll(&pr);
        MPI_Start(&ps);
        if (more) MPI_Start(&pr);
        poll(&ps);
      }
      if (!more) {
        MPI_Request_free(&ps);
        MPI_Request_free(&pr);
      }
    } else if (base == "latency") {
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
  if (file != MPI_FILE_NULL) MPI_File_close(&file);
  if (rank == 0) {
    std::sort(samples.begin(), samples.end());
    if (base != "bandwidth")
      std::printf("p50_ns %.1f\n", samples[samples.size() / 2] / 2.0);
    else
      std::printf("gbps %.4f\n", static_cast<double>(bytes) * window * iters / static_cast<double>(total));
  }
  MPI_Finalize();
  return 0;
}
