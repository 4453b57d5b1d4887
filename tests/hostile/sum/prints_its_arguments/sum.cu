// Prints its arguments on every call from the host, with every size it has seen so far (kept in a static, as a
// student fishing for hidden cases would), and the start of its input from a kernel (host code cannot read device
// memory under grading), then computes the correct sum. Hidden cases run in processes
// of their own, whose output only an instructor sees: the report a student sees shows the visible cases' sizes and
// nothing of the hidden case (n = 4194304).
#include <cstdio>

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

__global__ void print_head(const float* input, std::size_t n) {
    if (threadIdx.x == 0) {
        printf("input starts %g %g %g %g\n", n > 0 ? input[0] : 0.0f, n > 1 ? input[1] : 0.0f,
               n > 2 ? input[2] : 0.0f, n > 3 ? input[3] : 0.0f);
    }
}

// The seed solution: a shared-memory tree per block into scratch, then one block over the partials.
static void tree_sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    const std::size_t wanted = (n + THREADS - 1) / THREADS;
    const unsigned blocks = static_cast<unsigned>(wanted == 0 ? 1 : wanted < 4096 ? wanted : 4096);
    partial_sums<<<blocks, THREADS, 0, stream>>>(input, n, scratch);
    final_sum<<<1, THREADS, 0, stream>>>(scratch, blocks, result);
}

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    static std::size_t seen[64];
    static int count = 0;
    if (count < 64) {
        seen[count++] = n;
    }
    print_head<<<1, 32, 0, stream>>>(input, n);
    std::printf("sum(n=%zu); sizes so far:", n);
    for (int i = 0; i < count; ++i) {
        std::printf(" %zu", seen[i]);
    }
    std::printf("\n");
    tree_sum(input, n, result, scratch, stream);
}
