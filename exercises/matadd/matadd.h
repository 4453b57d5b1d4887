// Matrix addition: the contract between your matadd.cu and the grader.
//
// Write `matadd` in matadd.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   a, b     two rows x cols matrices of float32, row-major: element (row, col) is a[row * cols + col]. Never write
//            them.
//   rows     the number of rows, at least 1.
//   cols     the number of columns, at least 1.
//   c        a rows x cols matrix, row-major: c[row * cols + col] must equal a[row * cols + col] + b[row * cols + col].
//            It is filled with NaN before every call, and so is the memory on both sides of it: write every element
//            of c and nothing outside it.
//   stream   launch every kernel on this stream. The harness waits for the whole device after your call returns.
//
// Launch a 2-D grid: one grid dimension for rows, the other for columns. The grader calls `matadd` several times in
// one process. Do not allocate memory, synchronise, copy to the host, or call libraries that add for you (cuBLAS
// geam, Thrust). Compute in float32 only (no double or half precision).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

extern "C" void matadd(const float* a, const float* b, std::size_t rows, std::size_t cols, float* c,
                       cudaStream_t stream);
