/* Forced into every translation unit of the SMPI build (cmake/FabscopeSmpi.cmake),
 * after SimGrid's own smpi_helpers.h. Works around what SimGrid 3.32's MPI does
 * differently from the standard, so the sources stay plain MPI. */
#pragma once
#include <smpi/smpi.h>

/* MPI_Test on MPI_REQUEST_NULL must set *flag to true. SimGrid 3.32's PMPI_Test
 * sets it only when a status is given, so with MPI_STATUS_IGNORE (NULL) a loop
 * polling a completed duplicate (runtime::startDuplicate) never ends. */
static inline int fabscope_smpi_test(MPI_Request* request, int* flag, MPI_Status* status) {
  MPI_Status ignored;
  return MPI_Test(request, flag, status != MPI_STATUS_IGNORE ? status : &ignored);
}
#define MPI_Test(request, flag, status) fabscope_smpi_test((request), (flag), (status))

/* gethostname names the machine running the simulation, the same for every rank;
 * a rank's host is the simulated host SMPI placed it on (the hostfile's name). */
#include <simgrid/host.h>
#include <string.h>
#include <unistd.h>
static inline int fabscope_smpi_gethostname(char* name, size_t length) {
  const char* simulated = sg_host_get_name(sg_host_self());
  if (length == 0) return -1;
  strncpy(name, simulated, length - 1);
  name[length - 1] = '\0';
  return 0;
}
#define gethostname(name, length) fabscope_smpi_gethostname((name), (length))
