// Dot product: the contract between your dot.cu and the grader.
//
// Write `dot` in dot.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   a, b     n float32 values each (n may be 0). Read them; never write them.
//   n        the number of values in each.
//   result   one float. Write a[0]*b[0] + a[1]*b[1] + ... + a[n-1]*b[n-1] to result[0] before your work finishes.
//            For n = 0 the dot product is 0, and you must still write it. result[0] holds NaN when your call begins:
//            if your kernels add into it (atomicAdd), set it to 0 first, on the stream.
//   scratch  DOT_SCRATCH_FLOATS floats of device memory for your per-block partial sums. Its contents on entry are
//            undefined (the grader fills it with NaN), so write every partial before you read it.
//   stream   launch every kernel on this stream. The harness waits for the whole device after your call returns.
//
// The grader calls `dot` several times in one process, with different inputs: state left in __device__ variables
// from one call must not change the next. Do not allocate memory, synchronise, copy to the host, or call libraries
// that compute the dot product for you (cuBLAS, CUB, Thrust). Compute in float32 only (no double, TF32 or half
// precision).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

// Room for one partial sum per block for grids of up to 65536 blocks.
inline constexpr std::size_t DOT_SCRATCH_FLOATS = 65536;

extern "C" void dot(const float* a, const float* b, std::size_t n, float* result, float* scratch, cudaStream_t stream);
