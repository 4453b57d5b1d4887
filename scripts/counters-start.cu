// What the checker's own profile of a speed test costs in a fresh process, and what breaks it
// (scripts/counters-start.sh). One program, three roles:
//   counters-start profile WARM_UP LAUNCHES CUPTI   a context, the profiler's setup, then three profiles of a call of
//                                                   LAUNCHES kernels, each step timed in wall and CPU seconds;
//                                                   WARM_UP is "kernel" (the checker's warm-up launch, as in a
//                                                   grading), "empty" (a warm-up pass with no launch) or "none"
//   counters-start busy SECONDS                     another context launching small kernels back to back
//   counters-start fault                            another context whose kernel faults (an illegal address)
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "counter_profile.hpp"

using cugrade::harness::CounterProfiler;
using cugrade::harness::ProfiledCall;
using cugrade::harness::ProfiledLaunch;

namespace {

__global__ void empty_kernel() {}
__global__ void scale(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = x[i] * 2.0f + 1.0f;
    }
}
__global__ void write_far(int* p) { p[threadIdx.x + (1 << 28)] = 1; }

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}
double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int profile(const std::string& warm_up, int launches, const char* cupti) {
    double wall = wall_seconds(), cpu = cpu_seconds();
    cudaFree(nullptr);
    std::printf("context: %.3f s wall, %.3f s cpu\n", wall_seconds() - wall, cpu_seconds() - cpu);
    const int n = 1 << 24;
    float* x = nullptr;
    cudaMalloc(&x, n * sizeof(float));
    wall = wall_seconds();
    cpu = cpu_seconds();
    CounterProfiler profiler(cupti);
    std::printf("setup: %.3f s wall, %.3f s cpu, %d passes\n", wall_seconds() - wall, cpu_seconds() - cpu,
                profiler.passes());
    int failed = 0;
    for (int round = 0; round < 3; ++round) {
        ProfiledCall call;
        call.call = [&] {
            for (int k = 0; k < launches; ++k) {
                scale<<<(n + 255) / 256, 256>>>(x, n);
            }
            cudaDeviceSynchronize();
        };
        call.launches = [] { return std::vector<cugrade::LaunchShape>{}; };
        call.expected_launches = static_cast<std::size_t>(launches);
        if (warm_up == "kernel") {
            call.warm_up = [] {
                empty_kernel<<<1, 32>>>();
                cudaDeviceSynchronize();
            };
        } else if (warm_up == "empty") {
            call.warm_up = [] {};
        }
        wall = wall_seconds();
        cpu = cpu_seconds();
        std::vector<ProfiledLaunch> ranges;
        try {
            ranges = profiler.profile(call);
        } catch (const std::exception& e) {
            std::printf("profile %d failed: %s\n", round, e.what());
            ++failed;
            continue;
        }
        std::printf("profile %d: %.3f s wall, %.3f s cpu, %zu ranges;", round, wall_seconds() - wall,
                    cpu_seconds() - cpu, ranges.size());
        for (const auto& [step, seconds] : profiler.step_seconds()) {
            std::printf(" %s %.3f", step.c_str(), seconds);
        }
        std::printf("\n");
    }
    return failed > 0 ? 1 : 0;
}

int busy(double seconds) {
    const int n = 1 << 16;
    float* x = nullptr;
    cudaMalloc(&x, n * sizeof(float));
    const double until = wall_seconds() + seconds;
    long launches = 0;
    while (wall_seconds() < until) {
        scale<<<n / 256, 256>>>(x, n);
        cudaDeviceSynchronize();
        ++launches;
    }
    std::printf("busy: %ld launches\n", launches);
    return 0;
}

int fault() {
    int* p = nullptr;
    cudaMalloc(&p, 128);
    write_far<<<1, 32>>>(p);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string role = argc > 1 ? argv[1] : "";
    if (role == "profile" && argc == 5) {
        return profile(argv[2], std::atoi(argv[3]), argv[4]);
    }
    if (role == "busy" && argc == 3) {
        return busy(std::atof(argv[2]));
    }
    if (role == "fault") {
        return fault();
    }
    std::fprintf(stderr, "usage: counters-start profile kernel|empty|none LAUNCHES CUPTI | busy SECONDS | fault\n");
    return 2;
}
