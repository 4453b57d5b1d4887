// Throughput of the references against the baselines named in docs/performance.md, measured in one run:
//   sum     vs cub::DeviceReduce::Sum
//   minmax  vs cub::DeviceReduce::Reduce over (x, x) pairs, one pass
//   transpose vs a device-to-device copy of the same bytes
// Each sample: the L2 cache flushed (a write over twice its size), then one call bracketed by CUDA events. The table
// gives the median of the samples, the bytes moved per second, and the ratio to the baseline.
// Built and run by scripts/bench-references.sh.
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "minmax.h"
#include "sum.h"
#include "transpose.h"

#define CHECK(call)                                                                                             \
    do {                                                                                                        \
        const cudaError_t status_ = (call);                                                                     \
        if (status_ != cudaSuccess) {                                                                           \
            std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,                      \
                         cudaGetErrorName(status_), cudaGetErrorString(status_));                               \
            std::exit(1);                                                                                       \
        }                                                                                                       \
    } while (0)

namespace {

constexpr int kSamples = 50;

struct Pair {
    __host__ __device__ float2 operator()(float x) const { return make_float2(x, x); }
};

struct MinMaxOp {
    __host__ __device__ float2 operator()(float2 a, float2 b) const {
        return make_float2(fminf(a.x, b.x), fmaxf(a.y, b.y));
    }
};

__global__ void fill(float* data, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{blockDim.x} * gridDim.x) {
        data[i] = static_cast<float>((i * 2654435761u) % 1000003) * 1e-6f - 0.5f;
    }
}

class Bench {
public:
    Bench() {
        int device = 0, l2 = 0;
        CHECK(cudaGetDevice(&device));
        CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
        flush_bytes_ = 2 * static_cast<std::size_t>(l2);
        CHECK(cudaMalloc(&flush_, flush_bytes_));
        CHECK(cudaStreamCreate(&stream_));
        CHECK(cudaEventCreate(&start_));
        CHECK(cudaEventCreate(&stop_));
        cudaDeviceProp properties{};
        CHECK(cudaGetDeviceProperties(&properties, device));
        std::printf("GPU: %s, %d SMs, L2 %d MiB; median of %d samples, L2 flushed before each\n\n", properties.name,
                    properties.multiProcessorCount, l2 >> 20, kSamples);
        std::printf("%-34s %12s %10s %10s\n", "what", "median ms", "GB/s", "vs base");
    }

    cudaStream_t stream() const { return stream_; }

    double median_ms(const std::function<void()>& call) {
        call();  // warm-up: module loading, first-touch
        CHECK(cudaStreamSynchronize(stream_));
        std::vector<double> samples;
        for (int i = 0; i < kSamples; ++i) {
            CHECK(cudaMemsetAsync(flush_, i, flush_bytes_, stream_));
            CHECK(cudaEventRecord(start_, stream_));
            call();
            CHECK(cudaEventRecord(stop_, stream_));
            CHECK(cudaEventSynchronize(stop_));
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, start_, stop_));
            samples.push_back(ms);
        }
        std::sort(samples.begin(), samples.end());
        return 0.5 * (samples[kSamples / 2 - 1] + samples[kSamples / 2]);
    }

    void row(const char* what, double ms, double bytes, double base_ms) {
        std::printf("%-34s %12.4f %10.0f %9.3fx\n", what, ms, bytes / (ms * 1e-3) / 1e9, base_ms / ms);
    }

private:
    void* flush_ = nullptr;
    std::size_t flush_bytes_ = 0;
    cudaStream_t stream_{};
    cudaEvent_t start_{}, stop_{};
};

void bench_reductions(Bench& bench, float* input, float* scratch, float* output, std::size_t n) {
    char label[64];
    void* temp = nullptr;
    std::size_t temp_bytes = 0;
    const auto pairs = thrust::make_transform_iterator(input, Pair{});
    std::size_t sum_bytes = 0, minmax_bytes = 0;
    CHECK(cub::DeviceReduce::Sum(nullptr, sum_bytes, input, output, static_cast<int>(n), bench.stream()));
    CHECK(cub::DeviceReduce::Reduce(nullptr, minmax_bytes, pairs, reinterpret_cast<float2*>(output),
                                    static_cast<int>(n), MinMaxOp{}, make_float2(INFINITY, -INFINITY),
                                    bench.stream()));
    temp_bytes = std::max(sum_bytes, minmax_bytes);
    CHECK(cudaMalloc(&temp, temp_bytes));
    const double bytes = static_cast<double>(n) * sizeof(float);

    const double cub_sum = bench.median_ms([&] {
        CHECK(cub::DeviceReduce::Sum(temp, sum_bytes, input, output, static_cast<int>(n), bench.stream()));
    });
    const double ref_sum = bench.median_ms([&] { sum(input, n, output, scratch, bench.stream()); });
    std::snprintf(label, sizeof label, "cub Sum, n=2^%d", __builtin_ctzll(n));
    bench.row(label, cub_sum, bytes, cub_sum);
    std::snprintf(label, sizeof label, "reference sum, n=2^%d", __builtin_ctzll(n));
    bench.row(label, ref_sum, bytes, cub_sum);

    const double cub_minmax = bench.median_ms([&] {
        CHECK(cub::DeviceReduce::Reduce(temp, minmax_bytes, pairs, reinterpret_cast<float2*>(output),
                                        static_cast<int>(n), MinMaxOp{}, make_float2(INFINITY, -INFINITY),
                                        bench.stream()));
    });
    const double ref_minmax = bench.median_ms([&] { minmax(input, n, output, scratch, bench.stream()); });
    std::snprintf(label, sizeof label, "cub min-max (one pass), n=2^%d", __builtin_ctzll(n));
    bench.row(label, cub_minmax, bytes, cub_minmax);
    std::snprintf(label, sizeof label, "reference minmax, n=2^%d", __builtin_ctzll(n));
    bench.row(label, ref_minmax, bytes, cub_minmax);
    CHECK(cudaFree(temp));
}

void bench_transpose(Bench& bench, float* input, float* output, std::size_t side) {
    char label[64];
    const std::size_t bytes = side * side * sizeof(float);
    const double copy = bench.median_ms(
        [&] { CHECK(cudaMemcpyAsync(output, input, bytes, cudaMemcpyDeviceToDevice, bench.stream())); });
    const double ref = bench.median_ms([&] { transpose(input, side, side, output, bench.stream()); });
    std::snprintf(label, sizeof label, "copy, %zux%zu", side, side);
    bench.row(label, copy, 2.0 * bytes, copy);
    std::snprintf(label, sizeof label, "reference transpose, %zux%zu", side, side);
    bench.row(label, ref, 2.0 * bytes, copy);
}

}  // namespace

int main() {
    Bench bench;
    const std::size_t max_n = std::size_t{1} << 28;
    float *input = nullptr, *output = nullptr, *scratch = nullptr;
    CHECK(cudaMalloc(&input, max_n * sizeof(float)));
    CHECK(cudaMalloc(&output, max_n * sizeof(float)));
    CHECK(cudaMalloc(&scratch, MINMAX_SCRATCH_FLOATS * sizeof(float)));
    fill<<<4096, 256>>>(input, max_n);
    CHECK(cudaDeviceSynchronize());
    for (const int log_n : {20, 24, 28}) {
        bench_reductions(bench, input, scratch, output, std::size_t{1} << log_n);
    }
    for (const std::size_t side : {std::size_t{8192}, std::size_t{16384}}) {
        bench_transpose(bench, input, output, side);
    }
    return 0;
}
