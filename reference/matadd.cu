// Reference matrix addition: a 2-D launch at memory bandwidth.
//
// Columns follow threadIdx.x, so each warp reads and writes consecutive floats of one row. When every row starts on
// a 16-byte boundary (cols a multiple of 4), each thread adds four columns at once with 16-byte loads. Each thread
// also takes several rows, its loads all issued before its first add, so that enough memory requests are in flight;
// and the grid's y dimension is capped at 65535 blocks with a loop over the rows beyond it, so that any number of
// rows works.
#include <algorithm>
#include <cstdint>

#include "matadd.h"

namespace {

constexpr unsigned kBlockX = 32;
constexpr unsigned kBlockY = 8;
constexpr unsigned kRowsPerThread = 4;
constexpr unsigned kMaxGridY = 65535;

template <class T>
__device__ T add(T x, T y) {
    if constexpr (sizeof(T) == sizeof(float4)) {
        return {x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w};
    } else {
        return x + y;
    }
}

// T is float4 (then `cols` counts vectors) or float.
template <class T>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    matadd_kernel(const T* __restrict__ a, const T* __restrict__ b, std::size_t rows, std::size_t cols,
                  T* __restrict__ c) {
    const std::size_t col = static_cast<std::size_t>(blockIdx.x) * kBlockX + threadIdx.x;
    if (col >= cols) {
        return;
    }
    const std::size_t rows_per_block = std::size_t{kBlockY} * kRowsPerThread;
    const std::size_t row_step = static_cast<std::size_t>(gridDim.y) * rows_per_block;
    for (std::size_t first = blockIdx.y * rows_per_block + threadIdx.y; first < rows; first += row_step) {
        T x[kRowsPerThread], y[kRowsPerThread];
#pragma unroll
        for (unsigned r = 0; r < kRowsPerThread; ++r) {
            const std::size_t row = first + r * kBlockY;
            if (row < rows) {
                x[r] = __ldg(a + row * cols + col);
                y[r] = __ldg(b + row * cols + col);
            }
        }
#pragma unroll
        for (unsigned r = 0; r < kRowsPerThread; ++r) {
            const std::size_t row = first + r * kBlockY;
            if (row < rows) {
                c[row * cols + col] = add(x[r], y[r]);
            }
        }
    }
}

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % sizeof(float4) == 0; }

template <class T>
void launch(const T* a, const T* b, std::size_t rows, std::size_t cols, T* c, cudaStream_t stream) {
    const std::size_t rows_per_block = std::size_t{kBlockY} * kRowsPerThread;
    const dim3 grid(
        static_cast<unsigned>((cols + kBlockX - 1) / kBlockX),
        static_cast<unsigned>(std::min<std::size_t>((rows + rows_per_block - 1) / rows_per_block, kMaxGridY)));
    matadd_kernel<T><<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(a, b, rows, cols, c);
}

}  // namespace

void matadd(const float* a, const float* b, std::size_t rows, std::size_t cols, float* c, cudaStream_t stream) {
    if (cols % 4 == 0 && aligned(a) && aligned(b) && aligned(c)) {
        launch(reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b), rows, cols / 4,
               reinterpret_cast<float4*>(c), stream);
    } else {
        launch(a, b, rows, cols, c, stream);
    }
}
