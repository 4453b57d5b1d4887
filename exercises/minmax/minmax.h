// Min/max: the contract between your minmax.cu and the grader.
//
// Write `minmax` in minmax.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   input    n float32 values (n may be 0). Read it; never write it.
//   n        the number of values.
//   output   two floats. Write the smallest value to output[0] and the largest to output[1].
//            For n = 0 write +INFINITY to output[0] and -INFINITY to output[1] (the identities of min and max).
//   scratch  MINMAX_SCRATCH_FLOATS floats of device memory for per-block partial results. Its contents on entry are
//            undefined (the grader fills it with NaN), so write every partial before you read it.
//   stream   launch every kernel on this stream. The harness waits for the whole device after your call returns.
//
// Values: inputs may hold +INFINITY and -INFINITY, never NaN. Results are compared exactly, and -0.0 equals +0.0, so
// either zero is right where the extreme is a zero.
//
// The grader calls `minmax` several times in one process, with different inputs: state left in __device__ variables
// from one call must not change the next. Do not allocate memory, synchronise, copy to the host, or call libraries
// that compute the answer for you (CUB, Thrust). Compute in float32 only (no double, TF32 or half precision).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

// Room for a minimum and a maximum per block, for grids of up to 65536 blocks.
inline constexpr std::size_t MINMAX_SCRATCH_FLOATS = 2 * 65536;

extern "C" void minmax(const float* input, std::size_t n, float* output, float* scratch, cudaStream_t stream);
