// Reference histogram: one pass over the values at memory bandwidth, whatever their distribution.
//
// Each block counts into its own copy of the histogram in shared memory (privatisation), so that the many increments
// go to shared-memory atomics, and adds its copy to the global counts once per bin at the end. Each thread reads
// 16-byte vectors in a grid-stride loop, two in flight, and keeps a run: consecutive values of the same bin are
// counted in a register and added with one atomic when the bin changes. On uniform values that is one atomic per
// value, as without runs; on values that all fall in one bin, where every atomic of a warp would hit one address and
// be serialised 32 ways, it is one atomic per thread. The grid fills the GPU once.
#include <algorithm>
#include <cstdint>

#include "histogram.h"

namespace {

constexpr int kThreads = 512;

// A run of values of one bin, kept by one thread: added to the block's counts when a value of another bin comes.
struct Run {
    int bin = -1;
    unsigned count = 0;

    __device__ void add(float x, float low, float high, unsigned bins, unsigned* block_counts) {
        const int b = histogram_bin(x, low, high, bins);
        if (b < 0) {
            return;
        }
        if (b == bin) {
            ++count;
            return;
        }
        if (count > 0) {
            atomicAdd(&block_counts[bin], count);
        }
        bin = b;
        count = 1;
    }

    __device__ void flush(unsigned* block_counts) {
        if (count > 0) {
            atomicAdd(&block_counts[bin], count);
        }
    }
};

__global__ void __launch_bounds__(kThreads)
    histogram_kernel(const float* __restrict__ values, std::size_t n, float low, float high, unsigned bins,
                     unsigned* __restrict__ counts, bool vectorised) {
    extern __shared__ unsigned block_counts[];
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) {
        block_counts[b] = 0;
    }
    __syncthreads();

    Run run;
    const auto add4 = [&](float4 v) {
        run.add(v.x, low, high, bins, block_counts);
        run.add(v.y, low, high, bins, block_counts);
        run.add(v.z, low, high, bins, block_counts);
        run.add(v.w, low, high, bins, block_counts);
    };
    const auto* vectors = reinterpret_cast<const float4*>(values);
    const std::size_t vector_count = vectorised ? n / 4 : 0;
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + threads < vector_count; i += 2 * threads) {
        const float4 first = __ldg(vectors + i);
        const float4 second = __ldg(vectors + i + threads);
        add4(first);
        add4(second);
    }
    if (i < vector_count) {
        add4(__ldg(vectors + i));
    }
    // The values after the last whole vector: n mod 4 of them, or all where the values are not 16-byte aligned.
    for (std::size_t j = vector_count * 4 + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
         j += threads) {
        run.add(values[j], low, high, bins, block_counts);
    }
    run.flush(block_counts);
    __syncthreads();

    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) {
        if (const unsigned count = block_counts[b]; count > 0) {
            atomicAdd(&counts[b], count);
        }
    }
}

int multiprocessors() {
    static const int count = [] {
        int device = 0, sms = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        return std::max(sms, 1);
    }();
    return count;
}

}  // namespace

void histogram(const float* values, std::size_t n, float low, float high, unsigned bins, unsigned* counts,
               unsigned* scratch, cudaStream_t stream) {
    (void)scratch;
    cudaMemsetAsync(counts, 0, bins * sizeof(unsigned), stream);
    if (n == 0) {
        return;
    }
    // Enough blocks to fill every SM (four of 512 threads each), fewer for small inputs: each thread gets at least
    // a few vectors, so that zeroing and adding the block's copy stay a small share of its work.
    const std::size_t wanted = (n / 4 + std::size_t{kThreads} * 4 - 1) / (std::size_t{kThreads} * 4);
    const auto blocks = static_cast<unsigned>(std::clamp<std::size_t>(wanted, 1, std::size_t(multiprocessors()) * 4));
    const bool vectorised = reinterpret_cast<std::uintptr_t>(values) % sizeof(float4) == 0;
    histogram_kernel<<<blocks, kThreads, bins * sizeof(unsigned), stream>>>(values, n, low, high, bins, counts,
                                                                            vectorised);
}
