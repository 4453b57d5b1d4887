// The baseline `cugrade bench` compares the reference with: CUB's DeviceReduce::Sum behind the exercise's contract.
// Its temporary storage is allocated once, on the first call, and reused.
#include <cub/device/device_reduce.cuh>

#include "sum.h"

void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t stream) {
    static void* storage = nullptr;
    static std::size_t storage_bytes = 0;
    std::size_t needed = 0;
    cub::DeviceReduce::Sum(nullptr, needed, input, result, static_cast<int>(n), stream);
    if (needed > storage_bytes) {
        cudaFree(storage);
        cudaMalloc(&storage, needed);
        storage_bytes = needed;
    }
    cub::DeviceReduce::Sum(storage, storage_bytes, input, result, static_cast<int>(n), stream);
}
