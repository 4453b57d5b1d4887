// The baseline `cugrade bench` compares the reference with: CUB's DeviceHistogram::HistogramEven behind the
// exercise's contract, its temporary storage in the contract's scratch memory. CUB's bins are the same as
// histogram_bin()'s except, perhaps, for a value that rounds onto a bin's edge; the speed test's inputs have none.
#include <cub/device/device_histogram.cuh>

#include <cstdio>
#include <cstdlib>

#include "histogram.h"

void histogram(const float* values, std::size_t n, float low, float high, unsigned bins, unsigned* counts,
               unsigned* scratch, cudaStream_t stream) {
    std::size_t storage_bytes = 0;
    cub::DeviceHistogram::HistogramEven(nullptr, storage_bytes, values, counts, static_cast<int>(bins + 1), low, high,
                                        static_cast<long long>(n), stream);
    if (storage_bytes > histogram_scratch_words(bins) * sizeof(unsigned)) {
        std::fprintf(stderr, "the CUB baseline needs %zu bytes of scratch, more than the contract gives\n",
                     storage_bytes);
        std::abort();
    }
    cub::DeviceHistogram::HistogramEven(scratch, storage_bytes, values, counts, static_cast<int>(bins + 1), low, high,
                                        static_cast<long long>(n), stream);
}
