// Reference vector sum: one launch, one pass over the input at memory bandwidth.
//
// The grid is sized to fill the GPU once (not one thread per element), and small inputs get fewer blocks so that each
// thread has at least four vectors to read: each thread reads 16-byte vectors in a grid-stride loop with four loads
// in flight, keeps its running sum in registers, and the block reduces with warp shuffles. The last block to finish
// adds the per-block partials, so there is no second launch: below 2^26 elements a launch costs as much as the
// reading. Blocks count themselves in a __device__ counter that the last block resets, so nothing survives between
// calls; the order of the final additions is fixed, so the result is the same on every call.
#include <algorithm>
#include <cstdint>

#include "sum.h"

namespace {

constexpr int kThreads = 512;
constexpr int kVectorsPerThread = 4;

__device__ unsigned blocks_done = 0;

__device__ float warp_sum(float value) {
    for (int offset = 16; offset > 0; offset /= 2) {
        value += __shfl_down_sync(0xffffffffu, value, offset);
    }
    return value;
}

// The block's total, valid in thread 0.
template <int Threads>
__device__ float block_sum(float value) {
    __shared__ float warp_totals[Threads / 32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    value = warp_sum(value);
    if (lane == 0) {
        warp_totals[warp] = value;
    }
    __syncthreads();
    if (warp == 0) {
        value = warp_sum(lane < Threads / 32 ? warp_totals[lane] : 0.0f);
    }
    return value;
}

__device__ float horizontal_sum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__global__ void __launch_bounds__(kThreads)
    sum_kernel(const float* __restrict__ input, std::size_t n, float* partials, float* __restrict__ result) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kThreads;
    std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
    float a = 0.0f, b = 0.0f, c = 0.0f, d = 0.0f;

    if (reinterpret_cast<std::uintptr_t>(input) % sizeof(float4) == 0) {
        const float4* vectors = reinterpret_cast<const float4*>(input);
        const std::size_t vector_count = n / 4;
        for (; i + 3 * stride < vector_count; i += 4 * stride) {
            const float4 v0 = __ldg(vectors + i);
            const float4 v1 = __ldg(vectors + i + stride);
            const float4 v2 = __ldg(vectors + i + 2 * stride);
            const float4 v3 = __ldg(vectors + i + 3 * stride);
            a += horizontal_sum(v0);
            b += horizontal_sum(v1);
            c += horizontal_sum(v2);
            d += horizontal_sum(v3);
        }
        for (; i < vector_count; i += stride) {
            a += horizontal_sum(__ldg(vectors + i));
        }
        // The last n % 4 elements, one per thread of the first block.
        const std::size_t tail = vector_count * 4 + threadIdx.x;
        if (blockIdx.x == 0 && tail < n) {
            b += input[tail];
        }
    } else {
        for (; i < n; i += stride) {
            a += input[i];
        }
    }

    const float total = block_sum<kThreads>((a + b) + (c + d));
    __shared__ bool last_block;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = total;
        // Publish the partial before counting this block as done.
        __threadfence();
        last_block = atomicAdd(&blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last_block) {
        return;
    }
    float value = 0.0f;
    for (unsigned k = threadIdx.x; k < gridDim.x; k += kThreads) {
        value += __ldcg(partials + k);  // from L2: other blocks wrote them
    }
    value = block_sum<kThreads>(value);
    if (threadIdx.x == 0) {
        result[0] = value;
        blocks_done = 0;
    }
}

// Enough resident blocks to keep every SM's memory pipeline full; looked up once per process.
unsigned grid_limit() {
    static const unsigned limit = [] {
        int device = 0;
        int sms = 0;
        int threads_per_sm = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device);
        return static_cast<unsigned>(sms * (threads_per_sm / kThreads));
    }();
    return limit;
}

}  // namespace

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    constexpr std::size_t kVectorsPerBlock = std::size_t{kThreads} * kVectorsPerThread;
    const std::size_t wanted = (n / 4 + kVectorsPerBlock - 1) / kVectorsPerBlock;
    const unsigned blocks =
        static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(wanted, grid_limit())));
    sum_kernel<<<blocks, kThreads, 0, stream>>>(input, n, scratch, result);
}
