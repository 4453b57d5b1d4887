// Accurate vector sum: the contract between your sum_accurate.cu and the grader.
//
// Write `sum_accurate` in sum_accurate.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   input    n float32 values. Never write them.
//   n        the number of values, 0 or more (up to 2^28).
//   result   one float: the sum of the n values, within about 3 units in the last place of float32 of the exact sum
//            (of the sum of their absolute values, to be precise: docs/rubric.md). A plain float32 sum is not that
//            accurate on the grader's inputs: compensate (README, "Why a plain sum is not enough"). It is filled
//            with NaN before every call.
//   scratch  SUM_ACCURATE_SCRATCH_FLOATS floats of device memory for your own use (per-block partial sums and their
//            compensations, a counter), filled with garbage before every call.
//   stream   launch every kernel on this stream. The harness waits for the whole device after your call returns.
//
// Sum in float32: no double-precision arithmetic (it would pass, but it teaches nothing here, and costs 64 times the
// time on many GPUs). The grader calls `sum_accurate` several times in one process, with different inputs. Do not
// allocate memory, synchronise, copy to the host, or call libraries that sum for you (CUB, Thrust).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

inline constexpr std::size_t SUM_ACCURATE_SCRATCH_FLOATS = 65536;

extern "C" void sum_accurate(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream);
