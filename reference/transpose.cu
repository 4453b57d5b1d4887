// Reference transpose: 32 x 32 tiles through shared memory, so that both the reads of the input and the writes of the
// output are coalesced; each tile row is padded by one float, so that reading a column of the tile touches 32
// different banks. Blocks of 32 x 8 threads move four elements each, and walk the tiles in a grid-stride loop.
#include <algorithm>

#include "transpose.h"

namespace {

constexpr unsigned kTile = 32;
constexpr unsigned kRowsPerPass = 8;

__global__ void __launch_bounds__(kTile * kRowsPerPass) transpose_tiles(const float* __restrict__ input,
                                                                        std::size_t rows, std::size_t cols,
                                                                        float* __restrict__ output,
                                                                        std::size_t tiles_across,
                                                                        std::size_t tile_count) {
    __shared__ float tile[kTile][kTile + 1];
    for (std::size_t t = blockIdx.x; t < tile_count; t += gridDim.x) {
        const std::size_t tile_y = t / tiles_across * kTile;
        const std::size_t tile_x = t % tiles_across * kTile;

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

unsigned grid_limit() {
    static const unsigned limit = [] {
        int device = 0;
        int sms = 0;
        int threads_per_sm = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device);
        return static_cast<unsigned>(sms * (threads_per_sm / (kTile * kRowsPerPass)) * 4);
    }();
    return limit;
}

}  // namespace

void transpose(const float* input, std::size_t rows, std::size_t cols, float* output, cudaStream_t stream) {
    const std::size_t tiles_across = (cols + kTile - 1) / kTile;
    const std::size_t tile_count = tiles_across * ((rows + kTile - 1) / kTile);
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(tile_count, grid_limit()));
    transpose_tiles<<<blocks, dim3(kTile, kRowsPerPass), 0, stream>>>(input, rows, cols, output, tiles_across,
                                                                       tile_count);
}
