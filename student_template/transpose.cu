// Matrix transpose. Read exercises/transpose/README.md first; the contract is in transpose.h.
//
// This file compiles and runs, but it computes nothing yet: the grader will report "never written".
// Fill in the kernel and the launch configuration where it says TODO.
#include "transpose.h"

constexpr unsigned TILE_SIZE = 32;
constexpr unsigned BLOCK_ROWS = 8;  // a block of TILE_SIZE x BLOCK_ROWS threads moves a TILE_SIZE x TILE_SIZE tile

__global__ void transpose_tile(const float* input, std::size_t rows, std::size_t cols, float* output) {
    // TODO: declare __shared__ float tile[TILE_SIZE][TILE_SIZE + 1]; (why + 1: see the README)
    // TODO: read the input tile that starts at row blockIdx.y * TILE_SIZE, column blockIdx.x * TILE_SIZE: each thread
    //       reads column threadIdx.x of rows threadIdx.y, threadIdx.y + BLOCK_ROWS, ... (coalesced), skipping
    //       elements outside the matrix.
    // TODO: __syncthreads(), then write the tile to the output tile that starts at row blockIdx.x * TILE_SIZE,
    //       column blockIdx.y * TILE_SIZE (the block indices swap), again one row per threadIdx.y, reading the tile
    //       by column. Skip elements outside the output.
    (void)input;
    (void)rows;
    (void)cols;
    (void)output;
}

void transpose(const float* input, std::size_t rows, std::size_t cols, float* output, cudaStream_t stream) {
    // TODO: one block per tile: (cols + TILE_SIZE - 1) / TILE_SIZE across, (rows + TILE_SIZE - 1) / TILE_SIZE down.
    const dim3 blocks(1, 1);
    const dim3 threads(TILE_SIZE, BLOCK_ROWS);
    transpose_tile<<<blocks, threads, 0, stream>>>(input, rows, cols, output);
}
