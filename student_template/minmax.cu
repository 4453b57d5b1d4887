// Minimum and maximum. Read exercises/minmax/README.md first; the contract is in minmax.h.
//
// This file compiles and runs, but it computes nothing yet: the grader will report "never written".
// Fill in the two kernels and the launch configuration where it says TODO.
#include "minmax.h"

constexpr unsigned THREADS_PER_BLOCK = 256;

// Pass 1: each block writes the minimum and maximum of its share of the input to partials.
__global__ void block_minmax(const float* input, std::size_t n, float* partials) {
    // TODO: declare two __shared__ arrays of THREADS_PER_BLOCK floats, one for minima and one for maxima.
    // TODO: each thread walks its elements with a grid-stride loop, keeping a running minimum (start at +INFINITY)
    //       and a running maximum (start at -INFINITY): fminf and fmaxf.
    // TODO: the tree, as in the sum exercise, with two comparisons per step and a __syncthreads() after each step.
    // TODO: thread 0 writes the block's minimum to partials[2 * blockIdx.x] and its maximum to
    //       partials[2 * blockIdx.x + 1].
    (void)input;
    (void)n;
    (void)partials;
}

// Pass 2: one block combines the per-block partials and writes output[0] (min) and output[1] (max).
__global__ void combine_partials(const float* partials, unsigned count, float* output) {
    // TODO: the same tree over `count` pairs. output must be written even when count is 0.
    (void)partials;
    (void)count;
    (void)output;
}

void minmax(const float* input, std::size_t n, float* output, float* scratch, cudaStream_t stream) {
    // TODO: choose the number of blocks. Each block needs two floats of scratch: at most MINMAX_SCRATCH_FLOATS / 2.
    const unsigned blocks = 1;
    block_minmax<<<blocks, THREADS_PER_BLOCK, 0, stream>>>(input, n, scratch);
    combine_partials<<<1, THREADS_PER_BLOCK, 0, stream>>>(scratch, blocks, output);
}
