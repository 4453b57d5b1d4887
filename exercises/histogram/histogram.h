// Histogram: the contract between your histogram.cu and the grader.
//
// Write `histogram` in histogram.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   values   n float32 values. Never write them.
//   n        the number of values, 0 or more.
//   low, high  the histogram's range: `bins` bins of equal width (high - low) / bins cover [low, high). A value
//            outside the range (below low, at or above high, or NaN) is not counted.
//   bins     the number of bins, 1 to HISTOGRAM_MAX_BINS.
//   counts   bins unsigned ints: counts[b] must be the number of values whose bin (histogram_bin below) is b. It is
//            filled with garbage before every call, and so is the memory after it: set every bin, starting from 0,
//            and write nothing past counts[bins - 1].
//   scratch  histogram_scratch_words(bins) unsigned ints of device memory for your own use, filled with garbage too.
//   stream   launch every kernel (and cudaMemsetAsync) on this stream. The harness waits for the whole device after
//            your call returns.
//
// The check is exact: use histogram_bin() for the bin of a value. Another formula of the same bins can round
// differently for a value on or next to a bin's edge, and the grader's inputs have many values on the edges.
//
// The grader calls `histogram` several times in one process, with different inputs. Do not allocate memory,
// synchronise, copy to the host, or call libraries that count for you (CUB, Thrust). Compute in float32 and
// integers only (no double or half precision).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

inline constexpr unsigned HISTOGRAM_MAX_BINS = 4096;  // 16 KiB of counts: one copy fits a block's shared memory

// Room for a partial histogram from each of 4096 blocks, and 65536 words more for counters and flags.
inline constexpr std::size_t histogram_scratch_words(unsigned bins) { return std::size_t{4096} * bins + 65536; }

// The bin of value x, or -1 for a value outside [low, high) or NaN. Values close below high can round up to `bins`
// in float: they belong to the last bin.
__host__ __device__ inline int histogram_bin(float x, float low, float high, unsigned bins) {
    if (!(x >= low && x < high)) {
        return -1;
    }
    const int bin = static_cast<int>((x - low) * (static_cast<float>(bins) / (high - low)));
    return bin < static_cast<int>(bins) ? bin : static_cast<int>(bins) - 1;
}

extern "C" void histogram(const float* values, std::size_t n, float low, float high, unsigned bins, unsigned* counts,
                          unsigned* scratch, cudaStream_t stream);
