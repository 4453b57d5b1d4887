// What a kernel that seems to hang costs the other processes on its GPU (scripts/hang-beside.sh): `spin S` keeps one
// block busy for S seconds in a context of its own; `probe` times what a harness's small case does, many short
// kernels each waited for from the host, and one pass over 256 MB, and prints both in milliseconds.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void check(cudaError_t code, const char* what) {
    if (code != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(code));
        std::exit(1);
    }
}

__global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

__global__ void small(float* out) { out[threadIdx.x] += 1.0f; }

__global__ void pass(const float* in, float* out, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        out[i] = in[i] * 2.0f;
    }
}

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 3 && std::strcmp(argv[1], "spin") == 0) {
        int rate_khz = 0;
        check(cudaDeviceGetAttribute(&rate_khz, cudaDevAttrClockRate, 0), "clock rate");
        spin<<<1, 32>>>(static_cast<long long>(std::atof(argv[2]) * rate_khz * 1000.0));
        std::printf("spinning\n");
        std::fflush(stdout);
        check(cudaDeviceSynchronize(), "spin");
        return 0;
    }
    float* small_buffer = nullptr;
    check(cudaMalloc(&small_buffer, 1024 * sizeof(float)), "malloc");
    const std::size_t n = std::size_t{64} << 20;
    float *in = nullptr, *out = nullptr;
    check(cudaMalloc(&in, n * sizeof(float)), "malloc");
    check(cudaMalloc(&out, n * sizeof(float)), "malloc");
    check(cudaMemset(in, 0, n * sizeof(float)), "memset");
    check(cudaDeviceSynchronize(), "warm-up");
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) {
        small<<<1, 1024>>>(small_buffer);
        check(cudaDeviceSynchronize(), "small");
    }
    const double small_ms = ms_since(start);
    start = std::chrono::steady_clock::now();
    pass<<<1024, 256>>>(in, out, n);
    check(cudaDeviceSynchronize(), "pass");
    std::printf("200 small kernels waited for one by one %.1f ms, one pass over 256 MB %.2f ms\n", small_ms,
                ms_since(start));
    return 0;
}
