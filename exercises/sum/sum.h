// Vector sum: the contract between your sum.cu and the grader.
//
// Write `sum` in sum.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   input    n float32 values (n may be 0). Read it; never write it.
//   n        the number of values.
//   result   one float. Write the sum of the n values to result[0] before your work finishes. For n = 0 the sum
//            is 0, and you must still write it.
//   scratch  SUM_SCRATCH_FLOATS floats of device memory for your per-block partial sums. Its contents on entry are
//            undefined (the grader fills it with NaN), so write every partial before you read it.
//   stream   launch every kernel on this stream. The harness waits for the whole device after your call returns.
//
// The grader calls `sum` several times in one process, with different inputs: state left in __device__ variables
// from one call must not change the next. Do not allocate memory, synchronise, copy to the host, or call libraries
// that compute the sum for you (CUB, Thrust, cuBLAS). Compute in float32 only (no double, TF32 or half precision).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

// Room for one partial sum per block for grids of up to 65536 blocks.
inline constexpr std::size_t SUM_SCRATCH_FLOATS = 65536;

extern "C" void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream);
