// Where a wrong matrix is wrong: its first wrong elements with their row, column, expected and obtained values; the
// rows and columns the wrong elements span; whether they all lie past the last whole tile along a side (a grid
// rounded down, a last partial tile left out); and a small map. Counted on the GPU against an expected value per
// element; only a failed check pays for it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "describe.hpp"
#include "explanation.hpp"
#include "guarded_buffer.cuh"

namespace cugrade::harness {

namespace matrix_map {
inline constexpr unsigned max_rows = 16;  // the map's size in marks; a smaller matrix gets a mark per element
inline constexpr unsigned max_cols = 64;
inline constexpr unsigned tile_sizes = 5;  // tiles of 8, 16, 32, 64 and 128 on a side
__host__ __device__ inline std::size_t tile(unsigned t) { return std::size_t{8} << t; }
inline constexpr int first_shown = 3;  // how many of the first wrong elements are named
}  // namespace matrix_map

struct MatrixMismatchCounts {
    unsigned long long wrong;
    unsigned long long first_from;  // the lowest wrong index at or above the pass's `from`
    unsigned long long min_row, max_row, min_col, max_col;
    unsigned long long
        inside_whole_tiles[matrix_map::tile_sizes];  // wrong elements inside the whole tiles of each size
    unsigned long long cells[matrix_map::max_rows * matrix_map::max_cols];
};

__device__ inline unsigned long long warp_sum(unsigned long long v) {
    for (int offset = 16; offset > 0; offset /= 2) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    return v;
}
__device__ inline unsigned long long warp_min(unsigned long long v) {
    for (int offset = 16; offset > 0; offset /= 2) {
        v = min(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    return v;
}
__device__ inline unsigned long long warp_max(unsigned long long v) {
    for (int offset = 16; offset > 0; offset /= 2) {
        v = max(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    return v;
}

// `expected(row, col)` is the right value of element (row, col) of the rows x cols output. With `locate` the pass
// also counts where the wrong elements lie; every pass finds the lowest wrong index at or above `from`.
template <class Expected>
__global__ void locate_mismatches(const float* output, std::size_t rows, std::size_t cols, Expected expected,
                                  unsigned long long from, bool locate, unsigned map_rows, unsigned map_cols,
                                  MatrixMismatchCounts* found) {
    const std::size_t count = rows * cols;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    unsigned long long wrong = 0, first_from = ~0ull;
    unsigned long long min_row = ~0ull, max_row = 0, min_col = ~0ull, max_col = 0;
    unsigned long long inside[matrix_map::tile_sizes] = {};
    // Every lane runs the same number of rounds, so that the whole warp meets at each shuffle.
    const std::size_t rounds = (count + stride - 1) / stride;
    std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (std::size_t round = 0; round < rounds; ++round, i += stride) {
        const std::size_t row = i / cols, col = i % cols;
        const bool is_wrong = i < count && __float_as_uint(output[i]) != __float_as_uint(expected(row, col));
        if (is_wrong && i >= from) {
            first_from = min(first_from, static_cast<unsigned long long>(i));
        }
        if (!locate) {
            continue;
        }
        // A warp's elements are consecutive, so they fall in one or two cells: one atomic per cell and warp.
        const long long cell =
            is_wrong ? static_cast<long long>(row * map_rows / rows * map_cols + col * map_cols / cols) : -1;
        const unsigned peers = __match_any_sync(0xffffffffu, cell);
        if (is_wrong && __ffs(peers) - 1 == static_cast<int>(threadIdx.x % 32)) {
            atomicAdd(&found->cells[cell], static_cast<unsigned long long>(__popc(peers)));
        }
        if (is_wrong) {
            ++wrong;
            min_row = min(min_row, static_cast<unsigned long long>(row));
            max_row = max(max_row, static_cast<unsigned long long>(row));
            min_col = min(min_col, static_cast<unsigned long long>(col));
            max_col = max(max_col, static_cast<unsigned long long>(col));
            for (unsigned t = 0; t < matrix_map::tile_sizes; ++t) {
                const std::size_t tile = matrix_map::tile(t);
                inside[t] += row < rows / tile * tile && col < cols / tile * tile;
            }
        }
    }
    first_from = warp_min(first_from);
    if (locate) {
        wrong = warp_sum(wrong);
        min_row = warp_min(min_row);
        max_row = warp_max(max_row);
        min_col = warp_min(min_col);
        max_col = warp_max(max_col);
        for (auto& n : inside) {
            n = warp_sum(n);
        }
    }
    if (threadIdx.x % 32 == 0 && (wrong > 0 || first_from != ~0ull)) {
        atomicMin(&found->first_from, first_from);
        if (locate) {
            atomicAdd(&found->wrong, wrong);
            atomicMin(&found->min_row, min_row);
            atomicMax(&found->max_row, max_row);
            atomicMin(&found->min_col, min_col);
            atomicMax(&found->max_col, max_col);
            for (unsigned t = 0; t < matrix_map::tile_sizes; ++t) {
                atomicAdd(&found->inside_whole_tiles[t], inside[t]);
            }
        }
    }
}

template <class Expected>
__global__ void expected_element(Expected expected, std::size_t row, std::size_t col, float* value) {
    *value = expected(row, col);
}

// How many of `total` items fall in part `part` of `parts` when item k goes to part k * parts / total.
inline std::size_t items_in_part(std::size_t total, std::size_t parts, std::size_t part) {
    const auto first_of = [&](std::size_t p) { return (p * total + parts - 1) / parts; };
    return first_of(part + 1) - first_of(part);
}

inline std::string percent_wrong(unsigned long long wrong, std::size_t count) {
    if (wrong == count) {
        return "every element is wrong";
    }
    const double share = 100.0 * static_cast<double>(wrong) / static_cast<double>(count);
    if (share < 1.0) {
        return "fewer than 1% of the elements are wrong";
    }
    return "about " + std::to_string(static_cast<int>(share + 0.5)) + "% of the elements are wrong";
}

// The explanation of a wrong rows x cols `output` (named `name` in messages: "c", "output"), whose element
// (row, col) should be expected(row, col).
template <class Expected>
Explanation explain_matrix(const float* output, std::size_t rows, std::size_t cols, Expected expected,
                           const std::string& name) {
    const unsigned map_rows = static_cast<unsigned>(std::min<std::size_t>(rows, matrix_map::max_rows));
    const unsigned map_cols = static_cast<unsigned>(std::min<std::size_t>(cols, matrix_map::max_cols));
    DeviceBuffer<MatrixMismatchCounts> found(1);
    MatrixMismatchCounts counts{};
    std::vector<unsigned long long> first;
    unsigned long long from = 0;
    for (int pass = 0; pass < matrix_map::first_shown; ++pass) {
        MatrixMismatchCounts start{};
        start.first_from = ~0ull;
        start.min_row = start.min_col = ~0ull;
        set_element(found.get(), start);
        locate_mismatches<<<grid_for(rows * cols), 256>>>(output, rows, cols, expected, from, pass == 0, map_rows,
                                                          map_cols, found.get());
        CUGRADE_CUDA_CHECK(cudaGetLastError());
        const MatrixMismatchCounts pass_counts = read_element(found.get());
        if (pass == 0) {
            counts = pass_counts;
        }
        if (pass_counts.first_from == ~0ull) {
            break;
        }
        first.push_back(pass_counts.first_from);
        from = pass_counts.first_from + 1;
    }

    Explanation explanation;
    const std::size_t count = rows * cols;
    explanation.summary = percent_wrong(counts.wrong, count);
    DeviceBuffer<float> value(1);
    for (const unsigned long long index : first) {
        const std::size_t row = index / cols, col = index % cols;
        expected_element<<<1, 1>>>(expected, row, col, value.get());
        CUGRADE_CUDA_CHECK(cudaGetLastError());
        const float want = read_element(value.get()), got = read_element(output + index);
        explanation.evidence.push_back(name + "[" + std::to_string(row) + "][" + std::to_string(col) + "] expected " +
                                       describe_number(want) + ", got " + describe_number(got) +
                                       (is_poison(got) ? " (never written)" : ""));
    }
    if (counts.wrong > 0) {
        explanation.evidence.push_back("the wrong elements lie in rows " + std::to_string(counts.min_row) + " to " +
                                       std::to_string(counts.max_row) + " and columns " +
                                       std::to_string(counts.min_col) + " to " + std::to_string(counts.max_col));
    }
    // Past the last whole tile along a side, and nowhere else: the smallest tile that says so is the likeliest.
    for (unsigned t = 0; t < matrix_map::tile_sizes; ++t) {
        const std::size_t tile = matrix_map::tile(t);
        const bool partial = rows % tile != 0 || cols % tile != 0;
        if (partial && rows >= tile && cols >= tile && counts.inside_whole_tiles[t] == 0 && counts.wrong > 0) {
            const std::string size = std::to_string(tile);
            explanation.summary = "wrong only in the last, partial tile along a side: every element inside the "
                                  "whole " +
                                  size + " x " + size + " tiles is right";
            explanation.category = "wrong only in the last, partial tile";
            explanation.hint = "the grid leaves out the rows or columns past the last multiple of " + size +
                               ", or its last blocks skip them: round the grid up, (rows + " + size + " - 1) / " +
                               size + ", and check row < rows and col < cols in the kernel";
            explanation.topic = "bounds";
            break;
        }
    }
    if (counts.wrong == count || count < 2) {
        return explanation;  // a map of one mark says nothing more
    }
    const std::size_t cell_rows = (rows + map_rows - 1) / map_rows, cell_cols = (cols + map_cols - 1) / map_cols;
    explanation.evidence.push_back("each mark of the map is " +
                                   (cell_rows * cell_cols == 1 ? std::string("one element")
                                                               : "about " + std::to_string(cell_rows) + " x " +
                                                                     std::to_string(cell_cols) + " elements") +
                                   ": # every element wrong, + some, . none");
    // The first pass's counts: each later pass starts from zero.
    for (unsigned r = 0; r < map_rows; ++r) {
        std::string line;
        for (unsigned c = 0; c < map_cols; ++c) {
            const unsigned long long in_cell = counts.cells[r * map_cols + c];
            const std::size_t size = items_in_part(rows, map_rows, r) * items_in_part(cols, map_cols, c);
            line += in_cell == 0 ? '.' : in_cell >= size ? '#' : '+';
        }
        explanation.map.push_back(line);
    }
    return explanation;
}

}  // namespace cugrade::harness
