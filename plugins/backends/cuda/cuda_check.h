// Status checks for CUDA runtime and cuBLAS calls: a failure throws mt::Error naming the
// call and the library's own error text.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "mt/error.h"

#define MT_CUDA_CHECK(call)                                                                   \
    do {                                                                                      \
        cudaError_t mt_status_ = (call);                                                      \
        MT_CHECK(mt_status_ == cudaSuccess, #call, " failed: ", cudaGetErrorName(mt_status_), \
                 ": ", cudaGetErrorString(mt_status_));                                       \
    } while (0)

#define MT_CUBLAS_CHECK(call)                                        \
    do {                                                             \
        cublasStatus_t mt_status_ = (call);                          \
        MT_CHECK(mt_status_ == CUBLAS_STATUS_SUCCESS, #call,         \
                 " failed: ", cublasGetStatusName(mt_status_), ": ", \
                 cublasGetStatusString(mt_status_));                 \
    } while (0)
