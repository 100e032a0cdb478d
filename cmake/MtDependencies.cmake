# Every third-party dependency, found once here (all from Debian packages; see scripts/setup.sh).
find_package(Threads REQUIRED)
# Boost: program_options, filesystem; header-only Asio/Beast (megatron-generate's REST server).
find_package(Boost 1.74 REQUIRED COMPONENTS program_options filesystem)
find_package(ICU 70 REQUIRED COMPONENTS uc i18n data)
find_package(simdjson REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
# PCRE2 (with JIT) runs the tokenizers' split regexes (core/src/text/regex_splitter.cpp).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
find_package(OpenMP REQUIRED)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)

set(MT_MPI_ENABLED OFF)
if(NOT MT_MPI STREQUAL "OFF")
    find_package(MPI COMPONENTS CXX)
    if(MPI_CXX_FOUND)
        set(MT_MPI_ENABLED ON)
    elseif(MT_MPI STREQUAL "ON")
        message(FATAL_ERROR "mt: MT_MPI=ON but MPI was not found")
    endif()
endif()

# NCCL for the "nccl" communicator of GPU ranks (bootstrapped through MPI): the header and
# library from the CUDA toolkit's directory, $NCCL_HOME or Debian's libnccl-dev (no CMake
# package ships with it). MT_NCCL_ENABLED gates plugins/comm/nccl.
set(MT_NCCL_ENABLED OFF)
if(MT_CUDA_ENABLED AND MT_MPI_ENABLED)
    find_path(MT_NCCL_INCLUDE_DIR nccl.h
        HINTS ENV NCCL_HOME ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
        PATH_SUFFIXES include)
    find_library(MT_NCCL_LIBRARY nccl
        HINTS ENV NCCL_HOME ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
        PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
    if(MT_NCCL_INCLUDE_DIR AND MT_NCCL_LIBRARY)
        add_library(mt_nccl UNKNOWN IMPORTED)
        set_target_properties(mt_nccl PROPERTIES
            IMPORTED_LOCATION ${MT_NCCL_LIBRARY}
            INTERFACE_INCLUDE_DIRECTORIES ${MT_NCCL_INCLUDE_DIR})
        set(MT_NCCL_ENABLED ON)
        message(STATUS "mt: NCCL ${MT_NCCL_LIBRARY}")
    else()
        message(STATUS "mt: NCCL not found; the nccl communicator plugin is not built")
    endif()
endif()
