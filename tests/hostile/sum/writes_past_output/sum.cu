// Writes out of bounds: a correct seed-tree sum, but the last step also writes result[1], one float past the only
// element of the output. cudaMalloc rounds allocations up, so nothing faults, and the sum in result[0] is right; the
// harness must check a guard region behind the output and fail every case as a wrong answer that says the
// submission wrote past the output.
#include "sum.h"

constexpr unsigned THREADS = 256;

__global__ void partial_sums(const float* input, std::size_t n, float* partials) {
    __shared__ float partial[THREADS];
    float acc = 0.0f;
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{blockDim.x} * gridDim.x) {
        acc += input[i];
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned active = blockDim.x / 2; active > 0; active /= 2) {
        if (threadIdx.x < active) {
            partial[threadIdx.x] += partial[threadIdx.x + active];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = partial[0];
    }
}

__global__ void final_sum(const float* partials, unsigned count, float* result) {
    __shared__ float partial[THREADS];
    float acc = 0.0f;
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) {
        acc += partials[i];
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned active = blockDim.x / 2; active > 0; active /= 2) {
        if (threadIdx.x < active) {
            partial[threadIdx.x] += partial[threadIdx.x + active];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        result[0] = partial[0];
        result[1] = partial[0];  // past the end of the output
    }
}

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    const std::size_t wanted = (n + THREADS - 1) / THREADS;
    const unsigned blocks = static_cast<unsigned>(wanted == 0 ? 1 : wanted < 4096 ? wanted : 4096);
    partial_sums<<<blocks, THREADS, 0, stream>>>(input, n, scratch);
    final_sum<<<1, THREADS, 0, stream>>>(scratch, blocks, result);
}
