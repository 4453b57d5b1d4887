// Cheats by computing on the CPU: copies the whole input to the host with cudaMemcpy, adds it up there in double
// precision, and copies the one-float result back. The answer would be right, but the exercise is a GPU reduction:
// the submission's host code runs in a process without a GPU, whose copies to the host the grader refuses (nothing
// the host computes from device memory could be timed), so every case is rejected.
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
