// Prefix sums (scan): the contract between your scan.cu and the grader.
//
// Write `scan` in scan.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   input      n float32 values (n may be 0). Read it; never write it.
//   n          the number of values.
//   output     n floats. With exclusive = 0 (an inclusive scan) output[i] = input[0] + ... + input[i];
//              with exclusive = 1 (an exclusive scan) output[0] = 0 and output[i] = input[0] + ... + input[i-1].
//              It is filled with NaN before every call, and so is the memory on both sides of it: write every
//              element of the output and nothing outside it.
//   exclusive  0 or 1, as above. The rubric grades both kinds.
//   scratch    scan_scratch_floats(n) floats of device memory, 16-byte aligned, for whatever your scan keeps between
//              its passes or its blocks: block sums, tile flags, counters. Its contents on entry are undefined (the
//              grader fills it with NaN bits), so a flag or counter must be set before it is read, by your own
//              kernel or a cudaMemsetAsync on the stream. You may store any type in it.
//   stream     launch every kernel on this stream. The harness waits for the whole device after your call returns.
//
// The grader calls `scan` several times in one process, with different inputs: state left in __device__ variables
// from one call must not change the next. Do not allocate memory, synchronise, copy to the host, or call libraries
// that scan for you (CUB, Thrust). Compute in float32 only (no double or half precision).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

// One float for every 128 inputs (a block sum per block of 128 or more elements, at every level of a recursive
// scan), plus 65536 more for flags and counters.
inline constexpr std::size_t scan_scratch_floats(std::size_t n) { return n / 128 + 65536; }

extern "C" void scan(const float* input, std::size_t n, float* output, int exclusive, float* scratch,
                     cudaStream_t stream);
