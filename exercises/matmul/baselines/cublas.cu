// The baseline `cugrade bench` compares the reference with: cuBLAS's SGEMM in float32 (no TF32: the default math
// mode, set explicitly), behind the exercise's contract. cuBLAS is column-major: the row-major C = A B is the
// column-major C^T = B^T A^T, which is SGEMM of B and A with their sizes swapped. The handle is made once and kept.
#include <cublas_v2.h>

#include "matmul.h"

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t k, std::size_t n,
            cudaStream_t stream) {
    static cublasHandle_t handle = [] {
        cublasHandle_t made = nullptr;
        cublasCreate(&made);
        cublasSetMathMode(made, CUBLAS_DEFAULT_MATH);
        return made;
    }();
    cublasSetStream(handle, stream);
    const float one = 1.0f, zero = 0.0f;
    cublasSgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int64_t>(n), static_cast<int64_t>(m),
                   static_cast<int64_t>(k), &one, b, static_cast<int64_t>(n), a, static_cast<int64_t>(k), &zero, c,
                   static_cast<int64_t>(n));
}
