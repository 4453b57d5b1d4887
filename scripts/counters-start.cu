// What the checker's own profile of a speed test costs in a fresh process, and what breaks it
// (scripts/counters-start.sh). One program, three roles:
//   counters-start profile WARM_UP LAUNCHES CUPTI   a context, the profiler's setup, then three profiles of a call of
//                                                   LAUNCHES kernels, each step timed in wall and CPU seconds;
//                                                   WARM_UP is "kernel" (the checker's warm-up launch, as in a
//                                                   grading), "empty" (a warm-up pass with no launch) or "none"
//   counters-start kept CUPTI [GATE]                one attach kept across six profiles: two kernels of the
//                                                   program's, then a kernel of a module loaded after the attach;
//                                                   with GATE (a folder), before each profile after the first it
//                                                   writes GATE/idle and waits for GATE/go (others fault meanwhile)
//   counters-start busy SECONDS                     another context launching small kernels back to back
//   counters-start fault                            another context whose kernel faults (an illegal address)
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
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
__global__ void offset(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = x[i] * 3.0f - 1.0f;
    }
}
// The same kind of kernel in a module of its own, loaded after the profiler attached (a submission's device code is).
constexpr const char* module_ptx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry add_one(.param .u64 x, .param .u32 n) {
  .reg .b64 %rd<4>; .reg .b32 %r<6>; .reg .f32 %f<3>; .reg .pred %past;
  ld.param.u64 %rd1, [x]; ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x; mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %past, %r5, %r1; @%past bra done;
  cvta.to.global.u64 %rd2, %rd1; mul.wide.s32 %rd3, %r5, 4; add.s64 %rd2, %rd2, %rd3;
  ld.global.f32 %f1, [%rd2]; add.f32 %f2, %f1, 0f3F800000; st.global.f32 [%rd2], %f2;
done: ret; }
)";
__global__ void write_far(int* p) { p[threadIdx.x + (1 << 28)] = 1; }

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}
double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The profile's ranges, or nothing after printing why it failed (and counting the failure).
std::optional<std::vector<ProfiledLaunch>> profile_or_say_why(CounterProfiler& profiler, const ProfiledCall& call,
                                                              int round, int& failed) {
    try {
        return profiler.profile(call);
    } catch (const std::exception& e) {
        std::printf("profile %d failed: %s\n", round, e.what());
        ++failed;
        return std::nullopt;
    }
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
        const auto profiled = profile_or_say_why(profiler, call, round, failed);
        if (!profiled) {
            continue;
        }
        const std::vector<ProfiledLaunch>& ranges = *profiled;
        std::printf("profile %d: %.3f s wall, %.3f s cpu, %zu ranges;", round, wall_seconds() - wall,
                    cpu_seconds() - cpu, ranges.size());
        for (const auto& [step, seconds] : profiler.step_seconds()) {
            std::printf(" %s %.3f", step.c_str(), seconds);
        }
        std::printf("\n");
    }
    return failed > 0 ? 1 : 0;
}

int kept(const char* cupti, const char* gate) {
    cudaFree(nullptr);
    int n = 1 << 24;
    float* x = nullptr;
    cudaMalloc(&x, n * sizeof(float));
    CounterProfiler profiler(cupti);
    profiler.keep_attached(true);
    int failed = 0;
    for (int round = 0; round < 6; ++round) {
        if (gate != nullptr && round > 0) {
            const std::filesystem::path folder(gate);
            if (FILE* idle = std::fopen((folder / "idle").c_str(), "w")) {
                std::fclose(idle);
            }
            while (!std::filesystem::exists(folder / "go")) {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            std::filesystem::remove(folder / "go");
        }
        CUmodule module = nullptr;
        CUfunction add_one = nullptr;
        if (round >= 3 && (cuModuleLoadData(&module, module_ptx) != CUDA_SUCCESS ||
                           cuModuleGetFunction(&add_one, module, "add_one") != CUDA_SUCCESS)) {
            std::printf("profile %d failed: the module did not load\n", round);
            ++failed;
            continue;
        }
        ProfiledCall call;
        call.call = [&] {
            if (add_one != nullptr) {
                void* arguments[] = {&x, &n};
                cuLaunchKernel(add_one, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, arguments, nullptr);
            } else if (round % 2 == 0) {
                scale<<<(n + 255) / 256, 256>>>(x, n);
            } else {
                offset<<<(n + 255) / 256, 256>>>(x, n);
            }
            cudaDeviceSynchronize();
        };
        call.launches = [] { return std::vector<cugrade::LaunchShape>{}; };
        call.expected_launches = 1;
        const double wall = wall_seconds();
        const auto profiled = profile_or_say_why(profiler, call, round, failed);
        if (!profiled) {
            continue;
        }
        const std::vector<ProfiledLaunch>& ranges = *profiled;
        double bytes = 0.0;
        if (!ranges.empty()) {
            const auto found = ranges[0].metrics.find("dram__bytes_read.sum");
            bytes = found != ranges[0].metrics.end() ? found->second : 0.0;
        }
        std::printf("profile %d (%s): %.3f s wall, dram__bytes_read.sum %.6g\n", round,
                    add_one != nullptr ? "a module loaded after the attach" : "the program's kernel",
                    wall_seconds() - wall, bytes);
        if (module != nullptr) {
            cuModuleUnload(module);
        }
    }
    profiler.detach();
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
    if (role == "kept" && (argc == 3 || argc == 4)) {
        return kept(argv[2], argc == 4 ? argv[3] : nullptr);
    }
    if (role == "busy" && argc == 3) {
        return busy(std::atof(argv[2]));
    }
    if (role == "fault") {
        return fault();
    }
    std::fprintf(
        stderr,
        "usage: counters-start profile kernel|empty|none LAUNCHES CUPTI | kept CUPTI [GATE] | busy SECONDS | fault\n");
    return 2;
}
