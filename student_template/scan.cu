// Prefix sums (scan). Read exercises/scan/README.md first; the contract is in scan.h.
//
// This file compiles and runs, but it computes nothing yet: the grader will report elements "never written".
// Fill in the kernels and the host function where it says TODO. The plan is the README's three-phase scan: each
// block scans its own elements, the block sums are scanned, and each block adds its offset.
#include "scan.h"

// Each block scans 2 * THREADS_PER_BLOCK elements, two per thread.
constexpr unsigned THREADS_PER_BLOCK = 256;

// Phase 1: block b scans its 2 * THREADS_PER_BLOCK elements of the input on its own and writes their total to
// block_sums[b], unless block_sums is null. input and output may be the same array (when you scan block sums in
// place), so each thread reads its elements before it writes them.
__global__ void scan_block(const float* input, std::size_t n, float* output, int exclusive, float* block_sums) {
    // TODO: declare __shared__ float tile[2 * THREADS_PER_BLOCK];
    // TODO: each thread loads elements threadIdx.x and threadIdx.x + THREADS_PER_BLOCK of the block into the tile,
    //       0 past the end of the input, and keeps the two values in registers.
    // TODO: the up-sweep (see the README), with a __syncthreads() before each level.
    // TODO: thread 0 writes the total, the tile's last element, to block_sums[blockIdx.x], then sets it to 0.
    // TODO: the down-sweep, with a __syncthreads() before each level and one after the last: the tile then holds
    //       the exclusive scan of the block.
    // TODO: write the elements below n to output: the tile's value for an exclusive scan, the tile's value plus the
    //       element the thread loaded for an inclusive one.
    (void)input;
    (void)n;
    (void)output;
    (void)exclusive;
    (void)block_sums;
}

// Phase 3: adds offsets[blockIdx.x], the sum of every element before this block, to each of the block's elements.
__global__ void add_block_offsets(float* output, std::size_t n, const float* offsets) {
    // TODO: each thread adds the offset to its two elements of the block, those below n.
    (void)output;
    (void)n;
    (void)offsets;
}

// Scans n elements of input into output. scratch holds this level's block sums and, after them, the next level's.
void scan_levels(const float* input, std::size_t n, float* output, int exclusive, float* scratch,
                 cudaStream_t stream) {
    // TODO: return at once when n is 0: there is nothing to scan, and a launch of 0 blocks is an error.
    // TODO: one block per 2 * THREADS_PER_BLOCK elements, rounded up.
    const unsigned blocks = 1;
    // TODO: with more than one block, give scan_block scratch for the block sums; one block needs no offset.
    scan_block<<<blocks, THREADS_PER_BLOCK, 0, stream>>>(input, n, output, exclusive, nullptr);
    // TODO: Phase 2, with more than one block: the exclusive scan of the block sums is each block's offset. Scan
    //       them in place with scan_levels itself (exclusive = 1), giving it the scratch after the block sums for
    //       the next level's. Then add the offsets.
    add_block_offsets<<<blocks, THREADS_PER_BLOCK, 0, stream>>>(output, n, scratch);
}

void scan(const float* input, std::size_t n, float* output, int exclusive, float* scratch, cudaStream_t stream) {
    scan_levels(input, n, output, exclusive, scratch, stream);
}
