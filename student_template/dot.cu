// Dot product. Read exercises/dot/README.md first; the contract is in dot.h.
//
// This file compiles and runs, but it computes nothing yet: the grader will report "result was never written".
// Fill in the two kernels and the launch configuration where it says TODO.
#include "dot.h"

constexpr unsigned THREADS_PER_BLOCK = 256;

// Pass 1: each block writes the sum of its share of the products a[i] * b[i] to partials[blockIdx.x].
__global__ void block_partial_dots(const float* a, const float* b, std::size_t n, float* partials) {
    // TODO: declare __shared__ float partial[THREADS_PER_BLOCK];
    // TODO: each thread adds up a[i] * b[i] over its elements with a grid-stride loop
    //       (start at blockIdx.x * blockDim.x + threadIdx.x, step blockDim.x * gridDim.x)
    //       and stores its running sum in partial[threadIdx.x].
    // TODO: the tree: halve the number of active threads each step, with the __syncthreads() each step needs.
    // TODO: thread 0 writes partial[0] to partials[blockIdx.x].
    (void)a;
    (void)b;
    (void)n;
    (void)partials;
}

// Pass 2: one block adds up the per-block partials and writes result[0].
__global__ void sum_partials(const float* partials, unsigned count, float* result) {
    // TODO: the same tree as pass 1, over `count` partials. result[0] must be written even when n is 0.
    (void)partials;
    (void)count;
    (void)result;
}

void dot(const float* a, const float* b, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    // TODO: choose the number of blocks. It may not exceed DOT_SCRATCH_FLOATS (one partial per block).
    const unsigned blocks = 1;
    block_partial_dots<<<blocks, THREADS_PER_BLOCK, 0, stream>>>(a, b, n, scratch);
    sum_partials<<<1, THREADS_PER_BLOCK, 0, stream>>>(scratch, blocks, result);
}
