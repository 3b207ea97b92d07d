# A build of fabscope for SimGrid's SMPI (docs/scale.md, "The real binary on a
# simulated fabric"): every rank runs as a SimGrid actor inside one smpirun
# process, on a simulated platform, with simulated time behind clock_gettime.
# Configure with the SMPI compiler wrappers:
#   CC=smpicc CXX=smpicxx cmake -S . -B build-smpi -DFABSCOPE_SMPI=ON
# What SMPI cannot run is left out here, each for a stated reason:
#   - MPI: smpicc/smpicxx bring SimGrid's own MPI (headers and library); the
#     host's MPI (found by FindMPI) must not be linked beside it.
#   - HDF5: serial only. Parallel HDF5 is built on the host's MPI-IO, which
#     SMPI does not provide; results are gathered to rank 0 (the default
#     "auto" write mode) and written with serial HDF5.
#   - CUDA/NCCL, UCX and libibverbs: their transports move real bytes over real
#     devices, outside the simulated network; only the mpi transport is
#     simulated.
#   - hwloc: the inventory would describe the machine running the simulation,
#     not the simulated hosts.
#   - unit and MPI tests: they are built and run by the ordinary build.
# The sources see FABSCOPE_SMPI=1 (fabscope/BuildConfig.hpp): the watchdog
# starts no threads and leaves signals alone (SMPI ranks are actors sharing one
# process: a real thread sleeping on real time, or a handler that ends "the
# rank", would act on every rank at once), and communicators are duplicated
# with MPI_Comm_dup (SimGrid 3.32 has no MPI_Comm_idup), and runtime::Communicator
# waits for its collectives instead of polling them (a simulated rank cannot be
# lost, and in SimGrid 3.32 every receive a test completes stays in its actor's
# activity list, searched at every activity end). cmake/smpi/fabscope_smpi_compat.h
# mends SimGrid's MPI where it departs from the standard (MPI_Ibarrier, MPI_Test on a
# null request) and runs the control plane's non-blocking collectives as blocking
# ones (SimGrid's non-blocking ones are linear: size^2 flows at once stalled 256
# ranks); smpirun must pick logarithmic algorithms (--cfg=smpi/coll-selector:mpich).

if(NOT CMAKE_CXX_COMPILER MATCHES "smpicxx" OR NOT CMAKE_C_COMPILER MATCHES "smpicc")
  message(FATAL_ERROR "FABSCOPE_SMPI=ON needs the SMPI compilers: configure a fresh build directory with "
                      "CC=smpicc CXX=smpicxx (found C: ${CMAKE_C_COMPILER}, C++: ${CMAKE_CXX_COMPILER})")
endif()

set(FABSCOPE_ENABLE_CUDA OFF)
set(FABSCOPE_ENABLE_NCCL OFF)
set(FABSCOPE_ENABLE_UCX OFF)
set(FABSCOPE_ENABLE_VERBS OFF)
set(FABSCOPE_ENABLE_HWLOC OFF)
set(FABSCOPE_BUILD_TESTS OFF)
set(FABSCOPE_INSTALL_PYTHON OFF)

# smpicxx compiles and links against SimGrid's MPI: the target stays empty.
add_library(MPI::MPI_C INTERFACE IMPORTED)
set(MPI_C_VERSION "SimGrid SMPI")
# smpi_helpers.h replaces malloc by a macro, which breaks <malloc.h> (runtime/MemoryUse.cpp).
add_compile_definitions(SMPI_NO_OVERRIDE_MALLOC=1)
# Where SimGrid's MPI departs from the standard, and its collectives cost the simulation most.
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-include> $<$<COMPILE_LANGUAGE:CXX>:${CMAKE_CURRENT_LIST_DIR}/smpi/fabscope_smpi_compat.h>)

# Serial HDF5 (Debian: libhdf5-dev, headers in include/hdf5/serial). A tree
# unpacked elsewhere is found through CMAKE_PREFIX_PATH or FABSCOPE_SMPI_HDF5_INCLUDE_DIR.
find_path(FABSCOPE_SMPI_HDF5_INCLUDE_DIR hdf5.h PATH_SUFFIXES hdf5/serial include/hdf5/serial NO_DEFAULT_PATH
          PATHS ${CMAKE_PREFIX_PATH} /usr/include /usr/local/include)
# Shared only: smpicxx links the program as a shared object, which a static
# libhdf5 (not built with -fPIC) cannot go into. The versioned name is the
# runtime package's file (libhdf5-103-1), for a tree whose unversioned link is absent.
set(fabscope_saved_suffixes ${CMAKE_FIND_LIBRARY_SUFFIXES})
set(CMAKE_FIND_LIBRARY_SUFFIXES .so)
find_library(FABSCOPE_SMPI_HDF5_LIBRARY NAMES hdf5_serial hdf5 libhdf5_serial.so.103
             PATHS ${CMAKE_PREFIX_PATH} /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib
             PATH_SUFFIXES hdf5/serial lib)
set(CMAKE_FIND_LIBRARY_SUFFIXES ${fabscope_saved_suffixes})
if(NOT FABSCOPE_SMPI_HDF5_INCLUDE_DIR OR NOT FABSCOPE_SMPI_HDF5_LIBRARY)
  message(FATAL_ERROR "FABSCOPE_SMPI=ON needs serial HDF5 (Debian: libhdf5-dev; headers in include/hdf5/serial): "
                      "found headers '${FABSCOPE_SMPI_HDF5_INCLUDE_DIR}', library '${FABSCOPE_SMPI_HDF5_LIBRARY}'")
endif()
file(STRINGS ${FABSCOPE_SMPI_HDF5_INCLUDE_DIR}/H5pubconf.h hdf5_parallel_line REGEX "define H5_HAVE_PARALLEL ")
if(hdf5_parallel_line)
  message(FATAL_ERROR "FABSCOPE_SMPI=ON: ${FABSCOPE_SMPI_HDF5_INCLUDE_DIR} is a parallel HDF5 (built on the host's "
                      "MPI-IO, which SMPI cannot provide); point FABSCOPE_SMPI_HDF5_INCLUDE_DIR at a serial one")
endif()
file(STRINGS ${FABSCOPE_SMPI_HDF5_INCLUDE_DIR}/H5pubconf.h hdf5_version_line REGEX "define H5_VERSION ")
string(REGEX MATCH "\"[0-9.]+\"" HDF5_VERSION "${hdf5_version_line}")
string(REPLACE "\"" "" HDF5_VERSION "${HDF5_VERSION}")
set(FABSCOPE_HDF5_PARALLEL 0)
add_library(fabscope_hdf5 INTERFACE)
target_include_directories(fabscope_hdf5 INTERFACE ${FABSCOPE_SMPI_HDF5_INCLUDE_DIR})
target_link_libraries(fabscope_hdf5 INTERFACE ${FABSCOPE_SMPI_HDF5_LIBRARY})
