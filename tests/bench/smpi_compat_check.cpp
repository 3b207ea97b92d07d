// What cmake/smpi/fabscope_smpi_compat.h promises, checked under smpirun
// (tests/bench/test_smpi_compat.py): compiled with smpicxx, with or without that
// header forced in. Prints one line per check, "ok ..." or "FAIL ...", and exits 1
// on any failure.
//   barrier: no rank leaves an MPI_Ibarrier (polled with MPI_Test, or MPI_Wait on
//            rank 0's side) before the last rank entered it; the last rank enters
//            1 ms of simulated time after the others.
//   allreduce, allgather, broadcast, gather, gatherv: MPI_Iallreduce, MPI_Iallgather,
//            MPI_Ibcast, MPI_Igather and MPI_Igatherv (rank r gives r + 1 values) give the
//            right values.
//   null test: MPI_Test on MPI_REQUEST_NULL with MPI_STATUS_IGNORE sets the flag.
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <vector>

namespace {

int failures = 0;

void report(int rank, bool ok, const char* what, double a, double b) {
  if (rank != 0) return;
  std::printf("%s %s (%.9f, %.9f)\n", ok ? "ok" : "FAIL", what, a, b);
  if (!ok) ++failures;
}

// Every rank enters at 0 except the last, which enters `late` seconds later; the
// earliest leave over all ranks must not come before that entry.
void barrierCheck(int rank, int size, bool waitOnRankZero, const char* what) {
  const double late = 1e-3;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  if (rank == size - 1) usleep(static_cast<useconds_t>(late * 1e6));
  const double entered = MPI_Wtime();
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  if (waitOnRankZero && rank == 0) {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else {
    for (int done = 0; !done;) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  }
  const double left = MPI_Wtime() - start;
  double earliestLeave = 0, lastEntry = 0;
  const double enteredAfter = entered - start;
  MPI_Reduce(&left, &earliestLeave, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&enteredAfter, &lastEntry, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  report(rank, earliestLeave >= lastEntry, what, earliestLeave, lastEntry);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  barrierCheck(rank, size, false, "barrier: earliest leave, last entry (s), polled with MPI_Test");
  barrierCheck(rank, size, true, "barrier: earliest leave, last entry (s), rank 0 in MPI_Wait");

  long long mine = rank + 1, sum = 0;
  MPI_Request request;
  MPI_Iallreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &request);
  for (int done = 0; !done;) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  const long long expected = static_cast<long long>(size) * (size + 1) / 2;
  int sumOk = sum == expected, allSumsOk = 0;
  MPI_Reduce(&sumOk, &allSumsOk, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
  report(rank, allSumsOk != 0, "allreduce: sum on rank 0, expected", static_cast<double>(sum),
         static_cast<double>(expected));

  std::vector<long long> gathered(static_cast<std::size_t>(size), -1);
  MPI_Iallgather(&mine, 1, MPI_LONG_LONG, gathered.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD, &request);
  for (int done = 0; !done;) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  int gatherOk = 1;
  for (int r = 0; r < size; ++r) gatherOk &= gathered[static_cast<std::size_t>(r)] == r + 1;
  int allGathersOk = 0;
  MPI_Reduce(&gatherOk, &allGathersOk, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
  report(rank, allGathersOk != 0, "allgather: every rank's values in rank order (first, last)",
         static_cast<double>(gathered.front()), static_cast<double>(gathered.back()));

  long long fromRoot = rank == 0 ? 4242 : -1;
  MPI_Ibcast(&fromRoot, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &request);
  for (int done = 0; !done;) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  int bcastOk = fromRoot == 4242, allBcastsOk = 0;
  MPI_Reduce(&bcastOk, &allBcastsOk, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
  report(rank, allBcastsOk != 0, "broadcast: the root's value on rank 0, expected", static_cast<double>(fromRoot),
         4242);

  std::vector<long long> atRoot(static_cast<std::size_t>(size), -1);
  MPI_Igather(&mine, 1, MPI_LONG_LONG, atRoot.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &request);
  for (int done = 0; !done;) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  int rootGatherOk = 1;
  for (int r = 0; r < size; ++r) rootGatherOk &= atRoot[static_cast<std::size_t>(r)] == r + 1;
  report(rank, rootGatherOk != 0, "gather: every rank's value at the root in rank order (first, last)",
         static_cast<double>(atRoot.front()), static_cast<double>(atRoot.back()));

  std::vector<int> counts(static_cast<std::size_t>(size)), displacements(static_cast<std::size_t>(size));
  for (int r = 0, at = 0; r < size; at += r + 1, ++r) {
    counts[static_cast<std::size_t>(r)] = r + 1;
    displacements[static_cast<std::size_t>(r)] = at;
  }
  std::vector<int> mineV(static_cast<std::size_t>(rank + 1), rank);
  std::vector<int> allV(static_cast<std::size_t>(size) * (size + 1) / 2, -1);
  MPI_Igatherv(mineV.data(), rank + 1, MPI_INT, allV.data(), counts.data(), displacements.data(), MPI_INT, 0,
               MPI_COMM_WORLD, &request);
  for (int done = 0; !done;) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  int gathervOk = 1;
  for (int r = 0; r < size; ++r)
    for (int k = 0; k <= r; ++k) gathervOk &= allV[static_cast<std::size_t>(displacements[r] + k)] == r;
  report(rank, gathervOk != 0, "gatherv: r + 1 values r from each rank r at the root (first, last)",
         static_cast<double>(allV.front()), static_cast<double>(allV.back()));

  int flag = 0;
  request = MPI_REQUEST_NULL;
  MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
  report(rank, flag != 0, "null test: the flag of MPI_Test on MPI_REQUEST_NULL (1 expected)", flag, 1);

  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
