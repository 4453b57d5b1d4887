// Reference dot product: one launch, one pass over both vectors at memory bandwidth.
//
// As the sum's reference: a grid sized to fill the GPU once, each thread reading 16-byte vectors of a and b in a
// grid-stride loop with several loads in flight and keeping its running sums in registers, a block reduction with
// warp shuffles, and the last block to finish adding the per-block partials in a fixed order, so there is no second
// launch and the result is the same on every call. The block counter is reset by the last block.
#include <algorithm>
#include <cstdint>

#include "dot.h"

namespace {

constexpr int kThreads = 512;
constexpr int kVectorsPerThread = 2;  // per vector: four 16-byte loads in flight per thread

__device__ unsigned blocks_done = 0;

__device__ float warp_sum(float value) {
    for (int offset = 16; offset > 0; offset /= 2) {
        value += __shfl_down_sync(0xffffffffu, value, offset);
    }
    return value;
}

// The block's total, valid in thread 0.
__device__ float block_sum(float value) {
    __shared__ float warp_totals[kThreads / 32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    value = warp_sum(value);
    if (lane == 0) {
        warp_totals[warp] = value;
    }
    __syncthreads();
    if (warp == 0) {
        value = warp_sum(lane < kThreads / 32 ? warp_totals[lane] : 0.0f);
    }
    return value;
}

__device__ float dot4(float4 x, float4 y) { return (x.x * y.x + x.y * y.y) + (x.z * y.z + x.w * y.w); }

__global__ void __launch_bounds__(kThreads) dot_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                                       std::size_t n, float* partials, float* __restrict__ result) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kThreads;
    std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
    float s0 = 0.0f, s1 = 0.0f;

    const bool vectors = reinterpret_cast<std::uintptr_t>(a) % sizeof(float4) == 0 &&
                         reinterpret_cast<std::uintptr_t>(b) % sizeof(float4) == 0;
    if (vectors) {
        const float4* a4 = reinterpret_cast<const float4*>(a);
        const float4* b4 = reinterpret_cast<const float4*>(b);
        const std::size_t vector_count = n / 4;
        for (; i + stride < vector_count; i += 2 * stride) {
            const float4 x0 = __ldg(a4 + i), y0 = __ldg(b4 + i);
            const float4 x1 = __ldg(a4 + i + stride), y1 = __ldg(b4 + i + stride);
            s0 += dot4(x0, y0);
            s1 += dot4(x1, y1);
        }
        for (; i < vector_count; i += stride) {
            s0 += dot4(__ldg(a4 + i), __ldg(b4 + i));
        }
        // The last n % 4 products, one per thread of the first block.
        const std::size_t tail = vector_count * 4 + threadIdx.x;
        if (blockIdx.x == 0 && tail < n) {
            s1 += a[tail] * b[tail];
        }
    } else {
        for (; i < n; i += stride) {
            s0 += a[i] * b[i];
        }
    }

    const float total = block_sum(s0 + s1);
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
    value = block_sum(value);
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

void dot(const float* a, const float* b, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    constexpr std::size_t kVectorsPerBlock = std::size_t{kThreads} * kVectorsPerThread;
    const std::size_t wanted = (n / 4 + kVectorsPerBlock - 1) / kVectorsPerBlock;
    const unsigned blocks =
        static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(wanted, grid_limit())));
    dot_kernel<<<blocks, kThreads, 0, stream>>>(a, b, n, scratch, result);
}
