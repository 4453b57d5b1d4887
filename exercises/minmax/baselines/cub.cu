// The baseline `cugrade bench` compares the reference with: CUB's DeviceReduce::Reduce over (x, x) pairs, the
// minimum and the maximum in one pass, behind the exercise's contract. Its temporary storage is the scratch memory the
// contract gives.
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/transform_iterator.h>

#include "minmax.h"

namespace {

struct Pair {
    __host__ __device__ float2 operator()(float x) const { return make_float2(x, x); }
};

struct Extremes {
    __host__ __device__ float2 operator()(float2 a, float2 b) const {
        return make_float2(fminf(a.x, b.x), fmaxf(a.y, b.y));
    }
};

}  // namespace

void minmax(const float* input, std::size_t n, float* output, float* scratch, cudaStream_t stream) {
    std::size_t storage_bytes = MINMAX_SCRATCH_FLOATS * sizeof(float);
    const auto pairs = thrust::make_transform_iterator(input, Pair{});
    auto* result = reinterpret_cast<float2*>(output);
    const float2 identity = make_float2(INFINITY, -INFINITY);
    cub::DeviceReduce::Reduce(scratch, storage_bytes, pairs, result, static_cast<int>(n), Extremes{}, identity, stream);
}
