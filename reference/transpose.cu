// Reference transpose: 32 x 32 tiles through shared memory, so that both the reads of the input and the writes of the
// output are coalesced; each tile row is padded by one float, so that reading a column of the tile touches 32
// different banks. One block of 32 x 8 threads per tile, four elements per thread; blocks walk down the tile rows
// only when there are more than a grid's 65535 of them.
#include <algorithm>

#include "transpose.h"

namespace {

constexpr unsigned kTile = 32;
constexpr unsigned kRowsPerPass = 8;
constexpr std::size_t kMaxGridY = 65535;

__global__ void __launch_bounds__(kTile * kRowsPerPass)
    transpose_tiles(const float* __restrict__ input, std::size_t rows, std::size_t cols, float* __restrict__ output) {
    __shared__ float tile[kTile][kTile + 1];
    const std::size_t tile_x = static_cast<std::size_t>(blockIdx.x) * kTile;
    for (std::size_t tile_y = static_cast<std::size_t>(blockIdx.y) * kTile; tile_y < rows;
         tile_y += static_cast<std::size_t>(gridDim.y) * kTile) {
        const std::size_t x = tile_x + threadIdx.x;
        if (x < cols) {
#pragma unroll
            for (unsigned dy = 0; dy < kTile; dy += kRowsPerPass) {
                const std::size_t y = tile_y + threadIdx.y + dy;
                if (y < rows) {
                    tile[threadIdx.y + dy][threadIdx.x] = __ldg(input + y * cols + x);
                }
            }
        }
        __syncthreads();
        // The output tile sits at the mirrored place: its rows are the input tile's columns.
        const std::size_t out_x = tile_y + threadIdx.x;
        if (out_x < rows) {
#pragma unroll
            for (unsigned dy = 0; dy < kTile; dy += kRowsPerPass) {
                const std::size_t out_y = tile_x + threadIdx.y + dy;
                if (out_y < cols) {
                    output[out_y * rows + out_x] = tile[threadIdx.x][threadIdx.y + dy];
                }
            }
        }
        __syncthreads();
    }
}

}  // namespace

void transpose(const float* input, std::size_t rows, std::size_t cols, float* output, cudaStream_t stream) {
    const std::size_t tiles_across = (cols + kTile - 1) / kTile;
    const std::size_t tiles_down = (rows + kTile - 1) / kTile;
    const dim3 grid(static_cast<unsigned>(tiles_across), static_cast<unsigned>(std::min(tiles_down, kMaxGridY)));
    transpose_tiles<<<grid, dim3(kTile, kRowsPerPass), 0, stream>>>(input, rows, cols, output);
}
