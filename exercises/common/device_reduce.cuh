// Reductions and scans of device data that a harness needs for its expected results (a sum, the extremes, prefix
// sums), run on the GPU with CUB so that no case copies its input to the host: a 2^28-element input costs a
// millisecond on the GPU and seconds on the host, and a batch shares the host's cores among several harnesses.
// On the CPU (the self-check, docs/cpu-mode.md) device memory is the host's, and the same functions are loops.
#pragma once

#ifndef CUGRADE_CPU
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#endif

#include <cstddef>

#include "cuda_check.cuh"
#include "tolerance.hpp"

namespace cugrade::harness {

// `Combine` must be associative (CUB combines partial results in an order of its own). Returns `initial` for an
// empty input. `Input` is a pointer or any iterator CUB takes.
#ifdef CUGRADE_CPU
template <class Result, class Input, class Transform, class Combine>
Result reduce_on_device(Input input, std::size_t n, Transform transform, Combine combine, Result initial) {
    Result result = initial;
    for (std::size_t i = 0; i < n; ++i) {
        result = combine(result, transform(input[i]));
    }
    return result;
}

template <class Input, class Output, class Combine>
void scan_on_device(Input input, Output output, std::size_t n, Combine combine) {
    for (std::size_t i = 0; i < n; ++i) {
        output[i] = i == 0 ? input[0] : combine(output[i - 1], input[i]);
    }
}
#else
template <class Result, class Input, class Transform, class Combine>
Result reduce_on_device(Input input, std::size_t n, Transform transform, Combine combine, Result initial) {
    DeviceBuffer<Result> result(1);
    std::size_t scratch_bytes = 0;
    CUGRADE_CUDA_CHECK(cub::DeviceReduce::TransformReduce(nullptr, scratch_bytes, input, result.get(), n, combine,
                                                          transform, initial));
    DeviceBuffer<unsigned char> scratch(scratch_bytes);
    CUGRADE_CUDA_CHECK(cub::DeviceReduce::TransformReduce(scratch.get(), scratch_bytes, input, result.get(), n, combine,
                                                          transform, initial));
    return read_element(result.get());  // waits for the reduction: one turn at the GPU, not two
}

// Inclusive prefix combinations of `input` into `output` (n elements each).
template <class Input, class Output, class Combine>
void scan_on_device(Input input, Output output, std::size_t n, Combine combine) {
    std::size_t scratch_bytes = 0;
    CUGRADE_CUDA_CHECK(cub::DeviceScan::InclusiveScan(nullptr, scratch_bytes, input, output, combine, n));
    DeviceBuffer<unsigned char> scratch(scratch_bytes);
    CUGRADE_CUDA_CHECK(cub::DeviceScan::InclusiveScan(scratch.get(), scratch_bytes, input, output, combine, n));
    CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
}
#endif

// One value as a term of an exact reference sum, and two partial reference sums combined. Summed in double in
// whatever order CUB picks: tolerance.hpp says why that is as good as exact for every tolerance.
struct AsSumTerm {
    __host__ __device__ tolerance::SumReference operator()(double value) const {
        return {value, fabs(value), rint(value) == value};
    }
};
struct AddSumTerms {
    __host__ __device__ tolerance::SumReference operator()(const tolerance::SumReference& a,
                                                           const tolerance::SumReference& b) const {
        return {a.sum + b.sum, a.abs_sum + b.abs_sum, a.all_integers && b.all_integers};
    }
};

}  // namespace cugrade::harness
