// Designs of the scan reference (reference/scan.cu, its Design template) timed against CUB's DeviceScan::InclusiveSum
// and a device-to-device copy, alone on the GPU: median of 30 calls each at 2^24 and 2^28, after 3 warm-up calls.
// Each design's output is compared with CUB's first. The figures behind docs/performance-history.md's design table.
//   nvcc -std=c++20 -O3 -arch=sm_90 -I exercises/scan scripts/scan-designs.cu -o scan-designs && ./scan-designs
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "../reference/scan.cu"

namespace {

template <class Call>
float median_ms(Call call) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    for (int i = 0; i < 3; ++i) {
        call();
    }
    std::vector<float> samples;
    for (int i = 0; i < 30; ++i) {
        cudaEventRecord(start);
        call();
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, start, stop);
        samples.push_back(ms);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

__global__ void fill(float* data, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        data[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f;
    }
}

struct Buffers {
    float* input;
    float* output;
    float* expected;
    float* scratch;
    std::size_t n;
};

// The largest difference from CUB's output relative to its magnitude: both are float32 scans in different orders.
double largest_difference(const Buffers& b) {
    std::vector<float> got(b.n), want(b.n);
    cudaMemcpy(got.data(), b.output, b.n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(want.data(), b.expected, b.n * sizeof(float), cudaMemcpyDeviceToHost);
    double worst = 0.0;
    for (std::size_t i = 0; i < b.n; ++i) {
        worst =
            std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]) / std::max(1.0, std::abs(double{want[i]})));
    }
    return worst;
}

template <unsigned Threads, unsigned Items, unsigned BlocksPerSm, unsigned FirstPauseNs, unsigned PollPauseNs>
void time_design(const Buffers& b, float cub_ms, bool vectors = true) {
    using D = Design<Threads, Items, BlocksPerSm, FirstPauseNs, PollPauseNs>;
    const auto call = [&] { scan_with<D>(b.input, b.n, b.output, 0, b.scratch, nullptr, vectors); };
    call();
    cudaDeviceSynchronize();
    const double difference = largest_difference(b);
    const float ms = median_ms(call);
    std::printf("  %4u threads x %2u, >= %2u blocks/SM, pauses %4u/%4u ns, %s: %.4f ms, %.3f x CUB (difference %.1e)\n",
                Threads, Items, BlocksPerSm, FirstPauseNs, PollPauseNs, vectors ? "16-byte" : " 4-byte", ms,
                ms / cub_ms, difference);
}

}  // namespace

int main() {
    for (const std::size_t n : {std::size_t{1} << 24, std::size_t{1} << 28}) {
        Buffers b{nullptr, nullptr, nullptr, nullptr, n};
        cudaMalloc(&b.input, n * sizeof(float));
        cudaMalloc(&b.output, n * sizeof(float));
        cudaMalloc(&b.expected, n * sizeof(float));
        cudaMalloc(&b.scratch, scan_scratch_floats(n) * sizeof(float));
        fill<<<1024, 256>>>(b.input, n);
        std::size_t temp_bytes = 0;
        cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, b.input, b.expected, n);
        void* temp = nullptr;
        cudaMalloc(&temp, temp_bytes);
        const float cub_ms =
            median_ms([&] { cub::DeviceScan::InclusiveSum(temp, temp_bytes, b.input, b.expected, n); });
        const float copy_ms =
            median_ms([&] { cudaMemcpyAsync(b.output, b.input, n * sizeof(float), cudaMemcpyDeviceToDevice); });
        std::printf("n = %zu: CUB %.4f ms, copy %.4f ms\n", n, cub_ms, copy_ms);
        time_design<128, 24, 8, 0, 0>(b, cub_ms);
        time_design<128, 24, 8, 0, 0>(b, cub_ms, false);
        time_design<128, 24, 8, 1000, 0>(b, cub_ms);
        time_design<128, 24, 8, 700, 700>(b, cub_ms);
        time_design<128, 24, 8, 1000, 700>(b, cub_ms);
        time_design<128, 28, 7, 700, 700>(b, cub_ms);
        time_design<128, 32, 6, 0, 0>(b, cub_ms);
        time_design<128, 32, 6, 700, 700>(b, cub_ms);
        time_design<128, 32, 6, 1000, 0>(b, cub_ms);
        time_design<128, 32, 6, 1000, 700>(b, cub_ms);
        time_design<128, 32, 6, 1500, 700>(b, cub_ms);
        time_design<128, 40, 5, 700, 700>(b, cub_ms);
        time_design<192, 24, 5, 700, 700>(b, cub_ms);
        time_design<256, 24, 4, 700, 700>(b, cub_ms);
        time_design<256, 16, 4, 0, 0>(b, cub_ms);
        time_design<512, 16, 2, 0, 0>(b, cub_ms);
        cudaFree(temp);
        cudaFree(b.input);
        cudaFree(b.output);
        cudaFree(b.expected);
        cudaFree(b.scratch);
    }
    const cudaError_t error = cudaGetLastError();
    std::printf("%s\n", error == cudaSuccess ? "done" : cudaGetErrorString(error));
    return error == cudaSuccess ? 0 : 1;
}
