// Cheats by computing on the CPU: copies the whole input to the host with cudaMemcpy, adds it up there in double
// precision, and copies the one-float result back. The answer would be right, but the exercise is a GPU reduction:
// the exercise forbids copies to the host (nothing the host computes from device memory could be timed), and the
// grader sees this one in the source, so every case is rejected before anything runs.
#include <vector>

#include "sum.h"

void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t) {
    std::vector<float> host(n);
    if (n > 0) {
        cudaMemcpy(host.data(), input, n * sizeof(float), cudaMemcpyDeviceToHost);
    }
    double total = 0.0;
    for (const float x : host) {
        total += x;
    }
    const float value = static_cast<float>(total);
    cudaMemcpy(result, &value, sizeof value, cudaMemcpyHostToDevice);
}
