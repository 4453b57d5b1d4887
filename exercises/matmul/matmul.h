// Matrix multiply: the contract between your matmul.cu and the grader.
//
// Write `matmul` in matmul.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   a        an m x k matrix of float32, row-major: element (i, l) is a[i * k + l]. Never write it.
//   b        a k x n matrix of float32, row-major: element (l, j) is b[l * n + j]. Never write it.
//   c        an m x n matrix, row-major: c[i * n + j] must be the sum over l of a[i * k + l] * b[l * n + j], in
//            float32, in any order (the tolerance is that of any float32 dot product of length k; exact for small
//            whole numbers). It is filled with NaN before every call, and so is the memory after it: write every
//            element of c and nothing past it.
//   m, k, n  the sizes, each at least 1, and none a multiple of anything: 1 x 1 x 1, 1023 x 1025 x 1027.
//   stream   launch every kernel on this stream. The harness waits for the whole device after your call returns.
//
// The grader calls `matmul` several times in one process. Do not allocate memory, synchronise, or call libraries
// that multiply for you (cuBLAS, CUTLASS, Thrust); float32 arithmetic only (no TF32 or half precision).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

extern "C" void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t k, std::size_t n,
                       cudaStream_t stream);
