// Reductions of a device buffer that a harness needs for its expected results (a sum, the extremes), run on the GPU
// with CUB so that no case copies its input to the host: a 2^28-element input costs a millisecond on the GPU and
// seconds on the host, and a batch shares the host's cores among several harnesses.
#pragma once

#include <cub/device/device_reduce.cuh>

#include <cstddef>

#include "harness.cuh"

namespace cugrade::harness {

// `Combine` must be associative (CUB combines partial results in an order of its own). Returns `initial` for an
// empty input.
template <class Result, class Transform, class Combine>
Result reduce_on_device(const float* input, std::size_t n, Transform transform, Combine combine, Result initial) {
    DeviceBuffer<Result> result(1);
    std::size_t scratch_bytes = 0;
    CUGRADE_CUDA_CHECK(cub::DeviceReduce::TransformReduce(nullptr, scratch_bytes, input, result.get(), n, combine,
                                                          transform, initial));
    DeviceBuffer<unsigned char> scratch(scratch_bytes);
    CUGRADE_CUDA_CHECK(cub::DeviceReduce::TransformReduce(scratch.get(), scratch_bytes, input, result.get(), n,
                                                          combine, transform, initial));
    CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
    return result.to_host()[0];
}

}  // namespace cugrade::harness
