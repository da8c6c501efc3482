# Finds pax-ocl's dependencies. All come from Debian 12 packages (see scripts/setup.sh).

find_package(Protobuf REQUIRED)                    # libprotobuf-dev + protobuf-compiler
find_package(fmt CONFIG REQUIRED)                  # libfmt-dev
find_package(spdlog CONFIG REQUIRED)               # libspdlog-dev
find_package(nlohmann_json 3.10 CONFIG REQUIRED)   # nlohmann-json3-dev
find_package(Eigen3 3.3 REQUIRED NO_MODULE)       # libeigen3-dev (header-only): the SSM's HiPPO eigenvalues
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
if(NOT Protobuf_PROTOC_EXECUTABLE)
  message(FATAL_ERROR "protoc not found: install protobuf-compiler (apt-get install protobuf-compiler)")
endif()
if(PAXOCL_FUZZ)
  return()  # the fuzz build is host-only: no OpenCL, MPI or hwloc
endif()

# OpenCL: build against the 1.2 API so the binary runs on every ICD (NVIDIA, AMD, Intel, PoCL).
set(CL_TARGET_OPENCL_VERSION 120)
find_package(OpenCL REQUIRED)                      # ocl-icd-opencl-dev + opencl-headers
find_package(CLBlast CONFIG REQUIRED)              # libclblast-dev
find_package(clFFT CONFIG REQUIRED)                # libclfft-dev
# BLIS (libblis-pthread-dev): CPU devices' GEMMs as native kernels (kernels_cl/blis_gemm.h). The
# pthread build explicitly: BLIS threads inside PoCL's worker threads, no OpenMP runtime.
find_path(PAXOCL_BLIS_INCLUDE_DIR blis.h PATH_SUFFIXES ${CMAKE_LIBRARY_ARCHITECTURE}/blis-pthread blis-pthread blis REQUIRED)
find_library(PAXOCL_BLIS_LIBRARY NAMES blis PATH_SUFFIXES ${CMAKE_LIBRARY_ARCHITECTURE}/blis-pthread blis-pthread REQUIRED)
if(NOT PAXOCL_BLIS_INCLUDE_DIR OR NOT PAXOCL_BLIS_LIBRARY)
  message(FATAL_ERROR "BLIS not found: apt-get install libblis-pthread-dev")
endif()
add_library(PaxOcl::BLIS UNKNOWN IMPORTED)
set_target_properties(PaxOcl::BLIS PROPERTIES IMPORTED_LOCATION ${PAXOCL_BLIS_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${PAXOCL_BLIS_INCLUDE_DIR})
# oneDNN (libdnnl-dev): CPU devices' GEMMs as native kernels with kernels for the CPU's instruction
# set (kernels_cl/onednn_gemm.h). Debian's build threads through OpenMP (libgomp), whose thread count
# pax-ocl sets per call: hence OpenMP too.
find_package(dnnl CONFIG)
if(NOT dnnl_FOUND)
  message(FATAL_ERROR "oneDNN not found: apt-get install libdnnl-dev")
endif()
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(MPI REQUIRED COMPONENTS C)            # libopenmpi-dev
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)  # libhwloc-dev

# The PoCL ICD is a run-time dependency only (the CPU fallback); warn early if it is missing.
if(NOT EXISTS /etc/OpenCL/vendors/pocl.icd)
  message(WARNING "PoCL ICD not found (/etc/OpenCL/vendors/pocl.icd): the CPU fallback and the test "
                  "suite need it. Install it with: apt-get install pocl-opencl-icd")
endif()

# mpiexec, for the multi-process tests.
find_program(PAXOCL_MPIEXEC NAMES mpiexec mpirun HINTS ${MPI_HOME} PATH_SUFFIXES bin)
