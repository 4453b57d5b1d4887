// Accurate vector sum. Read exercises/sum_accurate/README.md first; the contract is in sum_accurate.h.
//
// This file compiles and runs, but it computes nothing yet: the grader will report "never written".
// Start from your sum.cu, then compensate where it says TODO.
#include "sum_accurate.h"

__global__ void partial_sums(const float* input, std::size_t n, float* partials) {
    // TODO: each thread sums its elements (a grid-stride loop) with a compensation beside its running sum:
    //       Kahan: y = x - c; t = sum + y; c = (t - sum) - y; sum = t.
    // TODO: combine the block's (sum, compensation) pairs, each combination a compensated addition too, and write
    //       the block's pair to partials[2 * blockIdx.x] and partials[2 * blockIdx.x + 1].
    (void)input;
    (void)n;
    (void)partials;
}

__global__ void final_sum(const float* partials, unsigned blocks, float* result) {
    // TODO: combine the blocks' pairs the same way; result[0] = sum + compensation.
    (void)partials;
    (void)blocks;
    (void)result;
}

void sum_accurate(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    // TODO: enough blocks of 256 threads, at most SUM_ACCURATE_SCRATCH_FLOATS / 2 (two floats per block).
    const unsigned blocks = 1;
    partial_sums<<<blocks, 256, 0, stream>>>(input, n, scratch);
    final_sum<<<1, 256, 0, stream>>>(scratch, blocks, result);
}
