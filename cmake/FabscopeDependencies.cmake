# Finds every library fabscope uses and records which optional backends are on.
# Required: MPI, HDF5 (parallel preferred), Boost.Program_options, yaml-cpp.
# With FABSCOPE_SMPI: SimGrid's MPI and serial HDF5 (cmake/FabscopeSmpi.cmake).
# Optional: CUDA Toolkit + NCCL, UCX, libibverbs, hwloc.

if(FABSCOPE_SMPI)
  set(FABSCOPE_SMPI_BUILD 1)
  include(FabscopeSmpi)
else()
  set(FABSCOPE_SMPI_BUILD 0)
  find_package(MPI REQUIRED COMPONENTS C)

  # Prefer the parallel HDF5 library; fall back to serial.
  set(HDF5_PREFER_PARALLEL TRUE)
  find_package(HDF5 REQUIRED COMPONENTS C)
  if(HDF5_IS_PARALLEL)
    set(FABSCOPE_HDF5_PARALLEL 1)
  else()
    set(FABSCOPE_HDF5_PARALLEL 0)
  endif()

  add_library(fabscope_hdf5 INTERFACE)
  target_include_directories(fabscope_hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
  target_link_libraries(fabscope_hdf5 INTERFACE ${HDF5_C_LIBRARIES} ${HDF5_LIBRARIES})
  target_compile_definitions(fabscope_hdf5 INTERFACE ${HDF5_C_DEFINITIONS} ${HDF5_DEFINITIONS})
endif()
# The deprecated MPI C++ bindings are never used (their symbols are not linked).
add_compile_definitions(OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)

find_package(Boost 1.71 REQUIRED COMPONENTS program_options)
find_package(yaml-cpp REQUIRED)
if(TARGET yaml-cpp::yaml-cpp)
  set(FABSCOPE_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(FABSCOPE_YAML_TARGET yaml-cpp)
endif()

find_package(PkgConfig QUIET)

# --- CUDA + NCCL -------------------------------------------------------------
set(FABSCOPE_HAVE_CUDA 0)
set(FABSCOPE_HAVE_NCCL 0)
if(NOT FABSCOPE_ENABLE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper (H100/H200) natively, plus PTX for anything newer.
      set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
    endif()
    enable_language(CUDA)
    # CMake 3.25 predates nvcc 13 and does not know its C++20 flag.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(FABSCOPE_HAVE_CUDA 1)
    if(FABSCOPE_ENABLE_NCCL)
      find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/include)
      find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu)
    endif()
    if(FABSCOPE_ENABLE_NCCL AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      set(FABSCOPE_HAVE_NCCL 1)
      add_library(fabscope_nccl INTERFACE)
      target_include_directories(fabscope_nccl INTERFACE ${NCCL_INCLUDE_DIR})
      target_link_libraries(fabscope_nccl INTERFACE ${NCCL_LIBRARY})
    endif()
  elseif(FABSCOPE_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FABSCOPE_ENABLE_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()

# --- UCX ---------------------------------------------------------------------
set(FABSCOPE_HAVE_UCX 0)
if(FABSCOPE_ENABLE_UCX AND PkgConfig_FOUND)
  pkg_check_modules(UCX IMPORTED_TARGET ucx)
  if(UCX_FOUND)
    set(FABSCOPE_HAVE_UCX 1)
  endif()
endif()

# --- libibverbs --------------------------------------------------------------
set(FABSCOPE_HAVE_VERBS 0)
if(FABSCOPE_ENABLE_VERBS AND PkgConfig_FOUND)
  pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
  if(IBVERBS_FOUND)
    set(FABSCOPE_HAVE_VERBS 1)
  endif()
endif()

# --- hwloc (PCI/NUMA affinity for the inventory) -----------------------------
set(FABSCOPE_HAVE_HWLOC 0)
if(FABSCOPE_ENABLE_HWLOC AND PkgConfig_FOUND)
  pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
  if(HWLOC_FOUND)
    set(FABSCOPE_HAVE_HWLOC 1)
  endif()
endif()
