#pragma once
// Unit tests that need MPI (the HDF5 writer takes a communicator) start it on
// first use as a singleton; the others never pay for MPI_Init.
namespace fabscope::testing {
void ensureMpi();
}
