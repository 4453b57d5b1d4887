// The wrong elements of an output, counted on the GPU in one pass: how many, and the lowest index. Each thread
// counts on its own and adds its count once, so that an output wrong everywhere costs no more to check than one
// right everywhere.
#pragma once

#include <cstddef>

#include "cuda_check.cuh"

namespace cugrade::harness {

struct Mismatches {
    unsigned long long wrong = 0;
    unsigned long long first_wrong = ~0ull;  // the lowest index that is wrong
};

template <class IsWrong>
__global__ void count_mismatches_kernel(std::size_t count, IsWrong is_wrong, Mismatches* found) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    unsigned long long wrong = 0, first_wrong = ~0ull;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        if (is_wrong(i)) {
            first_wrong = wrong++ == 0 ? i : first_wrong;
        }
    }
    if (wrong > 0) {
        atomicAdd(&found->wrong, wrong);
        atomicMin(&found->first_wrong, first_wrong);
    }
}

// `is_wrong(i)`, a functor callable on the device, says whether element i of [0, count) is wrong.
template <class IsWrong>
Mismatches count_mismatches(std::size_t count, IsWrong is_wrong) {
    if (count == 0) {
        return {};
    }
    DeviceBuffer<Mismatches> counted(1);
    set_element(counted.get(), Mismatches{});
    count_mismatches_kernel<<<grid_for(count), 256>>>(count, is_wrong, counted.get());
    CUGRADE_CUDA_CHECK(cudaGetLastError());
    return read_element(counted.get());
}

}  // namespace cugrade::harness
