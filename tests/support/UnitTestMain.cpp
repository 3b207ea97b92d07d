#include <gtest/gtest.h>
#include <mpi.h>

#include "MpiForTests.hpp"

namespace fabscope::testing {
void ensureMpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
}
}  // namespace fabscope::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
  return rc;
}
