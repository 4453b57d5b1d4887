// Reference prefix sums: a single pass with decoupled look-back (Merrill & Garland, "Single-pass Parallel Prefix
// Scan with Decoupled Look-back", 2016), the method of CUB's DeviceScan.
//
// Each block scans a tile, and each of its warps a contiguous part of the tile, 32 x Items elements. A warp loads its
// part with coalesced 16-byte loads and turns it around through its own corner of shared memory, so that each thread
// holds Items consecutive elements; that needs only the warp to wait for itself, never the block. The thread scans
// them in registers, the warp scans its threads' totals with shuffles, and only the warps' totals cross the block.
// The tile then learns the sum of all tiles before it without waiting for a second pass: warp 0 publishes the tile's
// total at once and looks back over its predecessors, 32 of them at a time, adding totals until it meets one that has
// published its full inclusive prefix. Tiles take their numbers from a counter in the order their blocks start, so a
// tile only ever waits on tiles whose blocks already run. Every element is read once and written once: about the
// copy's bandwidth. Small blocks, many of them on each SM, keep loads in flight while some blocks look back.
//
// Scratch holds the counter and one 64-bit word per tile, its status and its value together, so that one store
// publishes both. A small kernel clears them before every scan: the grader hands over scratch full of NaN.
#include <algorithm>
#include <cstdint>

#include "scan.h"

namespace {

// A block's threads, the consecutive elements each thread scans, the blocks each SM must hold at least, and the
// pauses of a warp looking back: before its first read of the predecessors, and between two reads while one of them
// has published nothing. scan() uses Chosen; scripts/scan-designs.cu times the others against CUB.
template <unsigned Threads, unsigned Items, unsigned BlocksPerSm, unsigned FirstPauseNs, unsigned PollPauseNs>
struct Design {
    static_assert(Threads % 32 == 0 && Items % 4 == 0, "whole warps, and whole 16-byte vectors per thread");
    static constexpr unsigned threads = Threads;
    static constexpr unsigned items = Items;  // per thread
    static constexpr unsigned blocks_per_sm = BlocksPerSm;
    static constexpr unsigned first_pause_ns = FirstPauseNs;
    static constexpr unsigned poll_pause_ns = PollPauseNs;
    static constexpr unsigned warps = Threads / 32;
    static constexpr unsigned part = 32 * Items;  // a warp's share of the tile
    static constexpr unsigned tile = Threads * Items;
};
using Chosen = Design<128, 32, 6, 1500, 700>;

// One float of padding per 32, so that a warp reading 32 consecutive elements, a warp writing 32 vectors, and a
// thread reading its Items consecutive elements hit different banks.
__host__ __device__ constexpr unsigned padded(unsigned i) { return i + i / 32; }

enum : unsigned { kInvalid = 0, kAggregate = 1, kPrefix = 2 };

struct tile_state {
    unsigned long long* counter;  // the next tile number to hand out
    unsigned long long* words;    // per tile: status in the high half, the float's bits in the low half
};

__device__ unsigned long long pack(unsigned status, float value) {
    return (static_cast<unsigned long long>(status) << 32) | __float_as_uint(value);
}

__device__ unsigned status_of(unsigned long long word) { return static_cast<unsigned>(word >> 32); }

__global__ void init_tile_states(tile_state state, std::size_t tiles) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < tiles; i += stride) {
        state.words[i] = 0;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *state.counter = 0;
    }
}

__device__ float warp_scan(float value, unsigned lane) {  // inclusive
    for (unsigned offset = 1; offset < 32; offset *= 2) {
        const float other = __shfl_up_sync(0xffffffffu, value, offset);
        if (lane >= offset) {
            value += other;
        }
    }
    return value;
}

// A warp's part of the tile into `items`, Items consecutive elements per thread, through the warp's `staging`.
// `available` counts the part's elements before the end of the input; past it, zeros, which change no prefix.
template <class D, bool Vectors>
__device__ void load_part(const float* __restrict__ part, std::size_t available, float* staging, unsigned lane,
                          float (&items)[D::items]) {
    if (Vectors && available >= D::part) {
        const float4* vectors = reinterpret_cast<const float4*>(part);
        float4 loaded[D::items / 4];
#pragma unroll
        for (unsigned k = 0; k < D::items / 4; ++k) {
            loaded[k] = __ldg(vectors + k * 32 + lane);
        }
#pragma unroll
        for (unsigned k = 0; k < D::items / 4; ++k) {
            const unsigned i = 4 * (k * 32 + lane);
            staging[padded(i)] = loaded[k].x;
            staging[padded(i + 1)] = loaded[k].y;
            staging[padded(i + 2)] = loaded[k].z;
            staging[padded(i + 3)] = loaded[k].w;
        }
    } else {
#pragma unroll
        for (unsigned k = 0; k < D::items; ++k) {
            const unsigned i = k * 32 + lane;
            staging[padded(i)] = i < available ? __ldg(part + i) : 0.0f;
        }
    }
    __syncwarp();
#pragma unroll
    for (unsigned k = 0; k < D::items; ++k) {
        items[k] = staging[padded(lane * D::items + k)];
    }
    __syncwarp();  // before the store uses staging again
}

// The way back: `items` of every thread to the warp's part of the output, as far as `available` reaches.
template <class D, bool Vectors>
__device__ void store_part(const float (&items)[D::items], float* staging, unsigned lane, float* __restrict__ part,
                           std::size_t available) {
#pragma unroll
    for (unsigned k = 0; k < D::items; ++k) {
        staging[padded(lane * D::items + k)] = items[k];
    }
    __syncwarp();
    if (Vectors && available >= D::part) {
        float4* vectors = reinterpret_cast<float4*>(part);
#pragma unroll
        for (unsigned k = 0; k < D::items / 4; ++k) {
            const unsigned i = 4 * (k * 32 + lane);
            vectors[k * 32 + lane] =
                make_float4(staging[padded(i)], staging[padded(i + 1)], staging[padded(i + 2)], staging[padded(i + 3)]);
        }
    } else {
#pragma unroll
        for (unsigned k = 0; k < D::items; ++k) {
            const unsigned i = k * 32 + lane;
            if (i < available) {
                part[i] = staging[padded(i)];
            }
        }
    }
}

// The sum of every tile before `tile`, found by warp 0; the same in every lane.
template <class D>
__device__ float look_back(const tile_state& state, std::size_t tile, unsigned lane) {
    volatile unsigned long long* words = state.words;
    if constexpr (D::first_pause_ns > 0) {
        __nanosleep(D::first_pause_ns);  // the nearest predecessors are likely still storing their words
    }
    float exclusive = 0.0f;
    long long nearest = static_cast<long long>(tile) - 1;  // the nearest predecessor not yet added
    while (true) {
        const long long index = nearest - lane;
        // Before tile 0 there is nothing: a full prefix of 0.
        unsigned long long word = index >= 0 ? words[index] : pack(kPrefix, 0.0f);
        // A predecessor that has published nothing yet is still loading its tile.
        while (__any_sync(0xffffffffu, status_of(word) == kInvalid)) {
            if constexpr (D::poll_pause_ns > 0) {
                __nanosleep(D::poll_pause_ns);
            }
            if (status_of(word) == kInvalid) {
                word = words[index];
            }
        }
        // The lanes up to the nearest full prefix count; beyond it, nothing.
        const unsigned prefixes = __ballot_sync(0xffffffffu, status_of(word) == kPrefix);
        const unsigned stop = prefixes != 0 ? __ffs(prefixes) - 1 : 31;
        float value = lane <= stop ? __uint_as_float(static_cast<unsigned>(word)) : 0.0f;
        for (unsigned offset = 16; offset > 0; offset /= 2) {
            value += __shfl_xor_sync(0xffffffffu, value, offset);
        }
        exclusive += value;
        if (prefixes != 0) {
            return exclusive;
        }
        nearest -= 32;
    }
}

template <class D, bool Vectors>
__global__ void __launch_bounds__(D::threads, D::blocks_per_sm)
                                      scan_kernel(const float* __restrict__ input, std::size_t n,
                                                  float* __restrict__ output, int exclusive_scan, tile_state state) {
    __shared__ float staging[D::warps][padded(D::part)];
    __shared__ float warp_totals[D::warps];
    __shared__ std::size_t tile_number;
    __shared__ float tile_prefix;
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) {
        tile_number = atomicAdd(state.counter, 1ull);
    }
    __syncthreads();
    const std::size_t tile = tile_number;
    const std::size_t start = tile * D::tile + std::size_t{warp} * D::part;
    const std::size_t available = start < n ? n - start : 0;

    float items[D::items];
    load_part<D, Vectors>(input + start, available, staging[warp], lane, items);
    float running = 0.0f;
#pragma unroll
    for (unsigned k = 0; k < D::items; ++k) {
        running += items[k];
    }
    const float inclusive = warp_scan(running, lane);
    if (lane == 31) {
        warp_totals[warp] = inclusive;
    }
    __syncthreads();
    // Every thread adds the warps' totals in the same order, so all agree on the tile's total.
    float warp_prefix = 0.0f, tile_total = 0.0f;
#pragma unroll
    for (unsigned w = 0; w < D::warps; ++w) {
        if (w == warp) {
            warp_prefix = tile_total;
        }
        tile_total += warp_totals[w];
    }

    if (warp == 0) {
        volatile unsigned long long* words = state.words;
        float before = 0.0f;
        if (tile == 0) {
            if (lane == 0) {
                words[0] = pack(kPrefix, tile_total);
            }
        } else {
            if (lane == 0) {
                words[tile] = pack(kAggregate, tile_total);
            }
            before = look_back<D>(state, tile, lane);
            if (lane == 0) {
                words[tile] = pack(kPrefix, before + tile_total);
            }
        }
        if (lane == 0) {
            tile_prefix = before;
        }
    }
    __syncthreads();

    float prefix = tile_prefix + warp_prefix + (inclusive - running);
#pragma unroll
    for (unsigned k = 0; k < D::items; ++k) {
        const float item = items[k];
        if (!exclusive_scan) {
            prefix += item;
        }
        items[k] = prefix;
        if (exclusive_scan) {
            prefix += item;
        }
    }
    store_part<D, Vectors>(items, staging[warp], lane, output + start, available);
}

// The whole scan with design D: every tile's word cleared, then one launch. 16-byte loads and stores where both
// arrays allow them.
template <class D>
void scan_with(const float* input, std::size_t n, float* output, int exclusive, float* scratch, cudaStream_t stream,
               bool allow_vectors = true) {
    if (n == 0) {
        return;
    }
    const std::size_t tiles = (n + D::tile - 1) / D::tile;
    auto* words = reinterpret_cast<unsigned long long*>(scratch);
    const tile_state state{words, words + 2};
    const unsigned init_blocks = static_cast<unsigned>(std::min<std::size_t>((tiles + 255) / 256, 1024));
    init_tile_states<<<init_blocks, 256, 0, stream>>>(state, tiles);
    const bool aligned =
        (reinterpret_cast<std::uintptr_t>(input) | reinterpret_cast<std::uintptr_t>(output)) % alignof(float4) == 0;
    const unsigned blocks = static_cast<unsigned>(tiles);
    if (allow_vectors && aligned) {
        scan_kernel<D, true><<<blocks, D::threads, 0, stream>>>(input, n, output, exclusive, state);
    } else {
        scan_kernel<D, false><<<blocks, D::threads, 0, stream>>>(input, n, output, exclusive, state);
    }
}

}  // namespace

void scan(const float* input, std::size_t n, float* output, int exclusive, float* scratch, cudaStream_t stream) {
    scan_with<Chosen>(input, n, output, exclusive, scratch, stream);
}
