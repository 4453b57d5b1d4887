// Cheats by replaying an answer: the first call ever computes a correct sum with the seed kernels and keeps a copy
// of it in a __device__ variable; every later call only launches one thread that copies the remembered value into
// result[0].
// Its cache is keyed on nothing, so it is right only while the input is the one it first saw: the first case's three
// calls pass (one input), every later case fails, and the speed test, whose correctness calls and timed calls use
// other inputs, must fail as a wrong answer whatever the process layout (the timed calls rotate through three
// inputs of different contents and every timed output is checked).
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
    }
}

// The seed solution: a shared-memory tree per block into scratch, then one block over the partials.
static void tree_sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    const std::size_t wanted = (n + THREADS - 1) / THREADS;
    const unsigned blocks = static_cast<unsigned>(wanted == 0 ? 1 : wanted < 4096 ? wanted : 4096);
    partial_sums<<<blocks, THREADS, 0, stream>>>(input, n, scratch);
    final_sum<<<1, THREADS, 0, stream>>>(scratch, blocks, result);
}

__device__ float remembered;

__global__ void remember(const float* result) { remembered = result[0]; }
__global__ void recall(float* result) { result[0] = remembered; }

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    static bool have_answer = false;
    if (have_answer) {
        recall<<<1, 1, 0, stream>>>(result);
        return;
    }
    tree_sum(input, n, result, scratch, stream);
    remember<<<1, 1, 0, stream>>>(result);
    have_answer = true;
}
