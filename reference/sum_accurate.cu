// Reference accurate sum: the reference sum's single pass at memory bandwidth, with every addition compensated.
//
// Each thread keeps four running sums, each with Neumaier's compensation (the rounding error of each addition,
// recovered exactly with two more additions and added up separately), over 16-byte vectors read in a grid-stride
// loop. The block then combines its threads' (sum, compensation) pairs with warp shuffles, each combination itself a
// compensated addition, and the last block to finish combines the blocks' pairs the same way; the result is the
// final sum plus the final compensation. Blocks count themselves in a __device__ counter that the last block resets.
#include <algorithm>
#include <cstdint>

#include "sum_accurate.h"

namespace {

constexpr int kThreads = 512;
constexpr int kVectorsPerThread = 4;

__device__ unsigned blocks_done = 0;

// A sum and the rounding errors its additions dropped.
struct Compensated {
    float sum = 0.0f;
    float error = 0.0f;

    __device__ void add(float x) {
        const float t = sum + x;
        error += fabsf(sum) >= fabsf(x) ? (sum - t) + x : (x - t) + sum;
        sum = t;
    }
    __device__ void add(Compensated other) {
        add(other.sum);
        error += other.error;
    }
    __device__ void add(float4 v) {
        add(v.x);
        add(v.y);
        add(v.z);
        add(v.w);
    }
};

__device__ Compensated warp_sum(Compensated value) {
    for (int offset = 16; offset > 0; offset /= 2) {
        value.add(Compensated{__shfl_down_sync(0xffffffffu, value.sum, offset),
                              __shfl_down_sync(0xffffffffu, value.error, offset)});
    }
    return value;
}

// The block's total, valid in thread 0.
__device__ Compensated block_sum(Compensated value) {
    __shared__ float warp_sums[kThreads / 32];
    __shared__ float warp_errors[kThreads / 32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    value = warp_sum(value);
    if (lane == 0) {
        warp_sums[warp] = value.sum;
        warp_errors[warp] = value.error;
    }
    __syncthreads();
    if (warp == 0) {
        value = warp_sum(lane < kThreads / 32 ? Compensated{warp_sums[lane], warp_errors[lane]} : Compensated{});
    }
    return value;
}

__global__ void __launch_bounds__(kThreads, 4)  // four blocks per SM: 32 registers at most
                                  sum_kernel(const float* __restrict__ input, std::size_t n, float* partials,
                                             float* __restrict__ result) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kThreads;
    std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
    Compensated a, b, c, d;
    if (reinterpret_cast<std::uintptr_t>(input) % sizeof(float4) == 0) {
        const float4* vectors = reinterpret_cast<const float4*>(input);
        const std::size_t vector_count = n / 4;
        for (; i + 3 * stride < vector_count; i += 4 * stride) {
            const float4 v0 = __ldg(vectors + i);
            const float4 v1 = __ldg(vectors + i + stride);
            const float4 v2 = __ldg(vectors + i + 2 * stride);
            const float4 v3 = __ldg(vectors + i + 3 * stride);
            a.add(v0);
            b.add(v1);
            c.add(v2);
            d.add(v3);
        }
        for (; i < vector_count; i += stride) {
            a.add(__ldg(vectors + i));
        }
        const std::size_t tail = vector_count * 4 + threadIdx.x;
        if (blockIdx.x == 0 && tail < n) {
            b.add(input[tail]);
        }
    } else {
        for (; i < n; i += stride) {
            a.add(input[i]);
        }
    }
    a.add(b);
    c.add(d);
    a.add(c);
    const Compensated total = block_sum(a);
    __shared__ bool last_block;
    if (threadIdx.x == 0) {
        partials[2 * blockIdx.x] = total.sum;
        partials[2 * blockIdx.x + 1] = total.error;
        __threadfence();  // publish the partial before counting this block as done
        last_block = atomicAdd(&blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last_block) {
        return;
    }
    Compensated value;
    for (unsigned k = threadIdx.x; k < gridDim.x; k += kThreads) {
        value.add(Compensated{__ldcg(partials + 2 * k), __ldcg(partials + 2 * k + 1)});
    }
    value = block_sum(value);
    if (threadIdx.x == 0) {
        result[0] = value.sum + value.error;
        blocks_done = 0;
    }
}

unsigned grid_limit() {
    static const unsigned limit = [] {
        int device = 0, sms = 0, threads_per_sm = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device);
        return static_cast<unsigned>(sms * (threads_per_sm / kThreads));
    }();
    return limit;
}

}  // namespace

void sum_accurate(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    constexpr std::size_t kVectorsPerBlock = std::size_t{kThreads} * kVectorsPerThread;
    const std::size_t wanted = (n / 4 + kVectorsPerBlock - 1) / kVectorsPerBlock;
    const unsigned blocks = static_cast<unsigned>(
        std::clamp<std::size_t>(wanted, 1, std::min<std::size_t>(grid_limit(), SUM_ACCURATE_SCRATCH_FLOATS / 2)));
    sum_kernel<<<blocks, kThreads, 0, stream>>>(input, n, scratch, result);
}
