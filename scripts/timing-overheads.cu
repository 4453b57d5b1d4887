// What the speed test's safeguards cost, and that they do what they claim (docs/performance-history.md, "What the
// timing's safeguards cost"): the L2 flush (a read of twice the L2, against a memset of the same size), a read of a
// buffer that fits in L2 with and without the flush before it, a persisting access-policy window's effect through a
// flush with the set-aside and with it held at zero, and the host time of setting the limit, clearing a stream's window
// and reading NVML. Leaves clocks alone.
//   nvcc -std=c++20 -O3 -arch=native -Iexercises/common scripts/timing-overheads.cu -o /tmp/timing-overheads
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "nvml_reader.hpp"

#define CHECK(call)                                                                              \
    do {                                                                                         \
        const cudaError_t status = (call);                                                       \
        if (status != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status)); \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

namespace {

__global__ void read_kernel(const float4* __restrict__ buffer, std::size_t count, float* sink) {
    float total = 0.0f;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const float4 v = __ldcg(buffer + i);
        total += v.x + v.w;
    }
    if (total == 1.0f) {
        sink[0] = total;
    }
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <class Work>
double gpu_us(cudaStream_t stream, Work&& work, const std::function<void()>& before = {}) {
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<double> samples;
    for (int i = 0; i < 50; ++i) {
        if (before) {
            before();
        }
        CHECK(cudaEventRecord(start, stream));
        work();
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        samples.push_back(1e3 * ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return median(samples);
}

template <class Work>
double host_us(Work&& work, int repeats) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats; ++i) {
        work();
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / repeats;
}

}  // namespace

int main() {
    int device = 0, l2 = 0, sms = 0, persisting_max = 0, window_max = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CHECK(cudaDeviceGetAttribute(&persisting_max, cudaDevAttrMaxPersistingL2CacheSize, device));
    CHECK(cudaDeviceGetAttribute(&window_max, cudaDevAttrMaxAccessPolicyWindowSize, device));
    cudaDeviceProp prop{};
    CHECK(cudaGetDeviceProperties(&prop, device));
    std::printf("%s: L2 %d MiB, persisting at most %d MiB, window at most %d MiB\n", prop.name, l2 >> 20,
                persisting_max >> 20, window_max >> 20);

    const std::size_t flush_bytes = 2 * static_cast<std::size_t>(l2);
    float4* flush = nullptr;
    float* sink = nullptr;
    CHECK(cudaMalloc(&flush, flush_bytes));
    CHECK(cudaMemset(flush, 0, flush_bytes));
    CHECK(cudaMalloc(&sink, sizeof(float)));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    const auto read_flush = [&] { read_kernel<<<4 * sms, 512, 0, stream>>>(flush, flush_bytes / 16, sink); };
    const auto write_flush = [&] { CHECK(cudaMemsetAsync(flush, 1, flush_bytes, stream)); };
    read_flush();
    write_flush();
    CHECK(cudaDeviceSynchronize());
    std::printf("flush by a read of %zu MiB: %.1f us; by a memset: %.1f us\n", flush_bytes >> 20,
                gpu_us(stream, read_flush), gpu_us(stream, write_flush));

    // A buffer a quarter of the L2: read warm (just read before), and cold (a flush between).
    const std::size_t small_bytes = static_cast<std::size_t>(l2) / 4;
    float4* small = nullptr;
    CHECK(cudaMalloc(&small, small_bytes));
    CHECK(cudaMemset(small, 0, small_bytes));
    const auto read_small = [&] { read_kernel<<<4 * sms, 512, 0, stream>>>(small, small_bytes / 16, sink); };
    std::printf("read of %zu MiB: warm %.2f us, after the read flush %.2f us\n", small_bytes >> 20,
                gpu_us(stream, read_small, read_small), gpu_us(stream, read_small, read_flush));

    if (persisting_max > 0) {
        // The buffer marked persisting on the stream, the set-aside as large as it may be: what a flush leaves.
        CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, std::min<std::size_t>(persisting_max, small_bytes)));
        cudaStreamAttrValue window{};
        window.accessPolicyWindow.base_ptr = small;
        window.accessPolicyWindow.num_bytes = std::min<std::size_t>(small_bytes, window_max);
        window.accessPolicyWindow.hitRatio = 1.0f;
        window.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
        window.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
        CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &window));
        std::printf("persisting window: read after the read flush %.2f us\n", gpu_us(stream, read_small, [&] {
                        read_small();
                        read_flush();
                    }));
        // What the speed test does: the set-aside to zero, persisting lines reset, the window cleared.
        const double set_limit_us = host_us(
            [&] {
                CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
                CHECK(cudaCtxResetPersistingL2Cache());
            },
            1);
        cudaStreamAttrValue none{};
        none.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
        none.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
        const double clear_window_us =
            host_us([&] { CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &none)); }, 100);
        CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &window));
        std::printf("set-aside held at zero, window kept: read after the read flush %.2f us\n",
                    gpu_us(stream, read_small, [&] {
                        read_small();
                        read_flush();
                    }));
        CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &none));
        std::printf("set-aside zero and persisting lines reset: %.1f us (host, once); window cleared: %.2f us\n",
                    set_limit_us, clear_window_us);
    }

    const auto load_start = std::chrono::steady_clock::now();
    auto* nvml = new cugrade::harness::NvmlReader();
    const double load_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - load_start).count();
    cugrade::gpu_conditions::Conditions conditions;
    const double read_us = host_us([&] { nvml->read(conditions); }, 200);
    std::printf("NVML: loaded in %.0f us, read in %.1f us; %s (reasons 0x%llx)\n", load_us, read_us,
                conditions.known ? cugrade::gpu_conditions::detail(conditions).c_str() : "no reading",
                static_cast<unsigned long long>(conditions.reasons));
    // Under load: reasons while the read flush runs back to back.
    cugrade::gpu_conditions::Conditions busy;
    for (int i = 0; i < 200; ++i) {
        for (int k = 0; k < 20; ++k) {
            read_flush();
        }
        nvml->read(busy);
    }
    CHECK(cudaDeviceSynchronize());
    std::printf("NVML under load: %s (reasons 0x%llx)\n",
                busy.known ? cugrade::gpu_conditions::detail(busy).c_str() : "no reading",
                static_cast<unsigned long long>(busy.reasons));
    delete nvml;
    return 0;
}
