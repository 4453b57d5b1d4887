// A submission's host code as the capture runtime sees it: nvcc's own launch code, the runtime calls a contract
// permits, and calls it refuses.
#include <cstddef>

#include <cuda_runtime.h>

__constant__ float weights[4];

template <int Block>
__global__ void partial_sums(const float* input, std::size_t n, float* partials) {
    if (threadIdx.x == 0 && blockIdx.x * Block < n) partials[blockIdx.x] = input[blockIdx.x * Block] * weights[0];
}
__global__ void finish(float* result, float bias) { *result += bias; }

extern "C" void permitted_calls(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    const float host_weights[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    cudaMemcpyToSymbolAsync(weights, host_weights, sizeof host_weights, 0, cudaMemcpyHostToDevice, stream);
    cudaMemsetAsync(result, 0, sizeof(float), stream);
    partial_sums<256><<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(input, n, scratch);
    finish<<<1, 1, 0, stream>>>(result, 2.5f);
}

extern "C" cudaError_t reads_back(float* result, cudaStream_t stream) {
    float host = 0.0f;
    return cudaMemcpyAsync(&host, result, sizeof host, cudaMemcpyDeviceToHost, stream);
}

extern "C" cudaError_t allocates(std::size_t bytes) {
    void* memory = nullptr;
    return cudaMalloc(&memory, bytes);
}

extern "C" int occupancy(int block_size) {
    int blocks = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, partial_sums<256>, block_size, 0) == cudaSuccess
               ? blocks
               : -1;
}
