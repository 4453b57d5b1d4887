// Reference matrix multiply: float32 SGEMM on the CUDA cores, from tiles in shared memory and registers.
//
// Each block of 256 threads computes a 128 x 128 tile of C. It walks along the inner size 8 columns of A and 8 rows
// of B at a time: both slices go to shared memory (A's transposed, so that a thread reads its rows of A as one
// 16-byte load), and each thread multiplies them into its 8 x 8 results, held in registers: 64 fused multiply-adds
// for every 16 floats it reads from shared memory. A thread's 8 rows and 8 columns are two groups of 4, 64 apart,
// so that the 16-byte loads of a warp from shared memory never conflict. The next slices are loaded from global
// memory into registers while the current ones are multiplied, and stored into the other of two shared buffers, so
// one barrier per step suffices. Shapes that are multiples of the tile, with rows on 16-byte boundaries, take 16-byte
// loads and stores without bounds checks; any other shape takes the same kernel with every access checked.
#include <cstdint>

#include "matmul.h"

namespace {

constexpr int kTileM = 128;
constexpr int kTileN = 128;
constexpr int kTileK = 8;
constexpr int kThreads = 256;  // 16 x 16, each computing 8 x 8 elements of C

// Four consecutive floats of a row-major rows x cols matrix from (row, col) on; with Checked, those outside it are 0.
template <bool Checked>
__device__ float4 load_four(const float* matrix, std::size_t rows, std::size_t cols, std::size_t row, std::size_t col) {
    if constexpr (!Checked) {
        return __ldg(reinterpret_cast<const float4*>(matrix + row * cols + col));
    } else {
        float v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[i] = row < rows && col + i < cols ? __ldg(matrix + row * cols + col + i) : 0.0f;
        }
        return {v[0], v[1], v[2], v[3]};
    }
}

template <bool Checked>
__global__ void __launch_bounds__(kThreads, 2)
                                      sgemm_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                                   float* __restrict__ c, std::size_t m, std::size_t k, std::size_t n) {
    __shared__ __align__(16) float a_slice[2][kTileK][kTileM];  // transposed: a_slice[l][i] is A(i, l)
    __shared__ __align__(16) float b_slice[2][kTileK][kTileN];

    const int tid = static_cast<int>(threadIdx.x);
    const int tx = tid % 16, ty = tid / 16;
    const std::size_t tile_row = static_cast<std::size_t>(blockIdx.y) * kTileM;
    const std::size_t tile_col = static_cast<std::size_t>(blockIdx.x) * kTileN;

    // Which 4 floats each thread loads: of A's 128 x 8 slice, row tid / 2 and columns (tid % 2) * 4 on; of B's
    // 8 x 128 slice, row tid / 32 and columns (tid % 32) * 4 on.
    const int a_row = tid / 2, a_col = (tid % 2) * 4;
    const int b_row = tid / 32, b_col = (tid % 32) * 4;

    const auto store_slices = [&](int buffer, float4 from_a, float4 from_b) {
        a_slice[buffer][a_col + 0][a_row] = from_a.x;
        a_slice[buffer][a_col + 1][a_row] = from_a.y;
        a_slice[buffer][a_col + 2][a_row] = from_a.z;
        a_slice[buffer][a_col + 3][a_row] = from_a.w;
        *reinterpret_cast<float4*>(&b_slice[buffer][b_row][b_col]) = from_b;
    };

    float results[8][8] = {};
    store_slices(0, load_four<Checked>(a, m, k, tile_row + a_row, a_col),
                 load_four<Checked>(b, k, n, b_row, tile_col + b_col));
    __syncthreads();

    int buffer = 0;
    for (std::size_t l0 = 0; l0 < k; l0 += kTileK) {
        const bool more = l0 + kTileK < k;
        float4 prefetched_a{}, prefetched_b{};
        if (more) {
            prefetched_a = load_four<Checked>(a, m, k, tile_row + a_row, l0 + kTileK + a_col);
            prefetched_b = load_four<Checked>(b, k, n, l0 + kTileK + b_row, tile_col + b_col);
        }
#pragma unroll
        for (int l = 0; l < kTileK; ++l) {
            const float4 a_low = *reinterpret_cast<const float4*>(&a_slice[buffer][l][ty * 4]);
            const float4 a_high = *reinterpret_cast<const float4*>(&a_slice[buffer][l][64 + ty * 4]);
            const float4 b_low = *reinterpret_cast<const float4*>(&b_slice[buffer][l][tx * 4]);
            const float4 b_high = *reinterpret_cast<const float4*>(&b_slice[buffer][l][64 + tx * 4]);
            const float from_a[8] = {a_low.x, a_low.y, a_low.z, a_low.w, a_high.x, a_high.y, a_high.z, a_high.w};
            const float from_b[8] = {b_low.x, b_low.y, b_low.z, b_low.w, b_high.x, b_high.y, b_high.z, b_high.w};
#pragma unroll
            for (int i = 0; i < 8; ++i) {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    results[i][j] = fmaf(from_a[i], from_b[j], results[i][j]);
                }
            }
        }
        if (more) {
            store_slices(buffer ^ 1, prefetched_a, prefetched_b);
            __syncthreads();
            buffer ^= 1;
        }
    }

    // Rows ty * 4 + {0..3} and 64 + ty * 4 + {0..3}; columns tx * 4 + {0..3} and 64 + tx * 4 + {0..3}.
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const std::size_t row = tile_row + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const std::size_t col = tile_col + half * 64 + tx * 4;
            const float* r = &results[i][half * 4];
            if constexpr (!Checked) {
                *reinterpret_cast<float4*>(c + row * n + col) = {r[0], r[1], r[2], r[3]};
            } else if (row < m) {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (col + j < n) {
                        c[row * n + col + j] = r[j];
                    }
                }
            }
        }
    }
}

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t k, std::size_t n,
            cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>((n + kTileN - 1) / kTileN), static_cast<unsigned>((m + kTileM - 1) / kTileM));
    const bool tiles_fit = m % kTileM == 0 && n % kTileN == 0 && k % kTileK == 0;
    if (tiles_fit && aligned(a) && aligned(b) && aligned(c)) {
        sgemm_kernel<false><<<grid, kThreads, 0, stream>>>(a, b, c, m, k, n);
    } else {
        sgemm_kernel<true><<<grid, kThreads, 0, stream>>>(a, b, c, m, k, n);
    }
}
