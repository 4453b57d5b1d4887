// Cheats by computing on the CPU: copies the whole input to the host with cudaMemcpy, adds it up there in double
// precision, and copies the one-float result back. The answer is right, but the exercise is a GPU reduction; the
// harness counts the bytes the submission moves from the GPU to the host during its call, and a copy of the whole
// input (4 bytes per element) must be rejected. At the smallest sizes the copy may be too small to tell apart from a
// legitimate read of a result, so those cases may pass.
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
