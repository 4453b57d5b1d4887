// Matrix transpose: the contract between your transpose.cu and the grader.
//
// Write `transpose` in transpose.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   input    a rows x cols matrix of float32, row-major: element (y, x) is input[y * cols + x]. Never write it.
//   rows     the number of rows of the input, at least 1.
//   cols     the number of columns of the input, at least 1.
//   output   the cols x rows transpose, row-major: output[x * rows + y] must equal input[y * cols + x].
//            It is filled with NaN before every call, and so is the memory on both sides of it: write every element
//            of the output and nothing outside it.
//   stream   launch every kernel on this stream. The harness waits for the whole device after your call returns.
//
// The grader calls `transpose` several times in one process. Do not allocate memory, synchronise, copy to the host,
// or call libraries that transpose for you (cuBLAS geam, CUTLASS). Compute in float32 only (no double or half).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

extern "C" void transpose(const float* input, std::size_t rows, std::size_t cols, float* output, cudaStream_t stream);
