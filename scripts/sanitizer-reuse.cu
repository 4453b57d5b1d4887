// One process serving several submissions in turn, as a harness process kept across submissions would: each
// argument a module (a submission's device code), loaded, its kernel launched three times, then unloaded. A marker
// line before each lets a tool's reports be pinned on the module that caused them (scripts/sanitizer-reuse.sh).
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>

int main(int argc, char** argv) {
    using Clock = std::chrono::steady_clock;
    const auto seconds_since = [](Clock::time_point t) {
        return std::chrono::duration<double>(Clock::now() - t).count();
    };
    if (cudaFree(nullptr) != cudaSuccess) {
        return 2;
    }
    int n = 4099;
    float* in = nullptr;
    float* out = nullptr;
    if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess || cudaMalloc(&out, sizeof(float)) != cudaSuccess ||
        cudaMemset(in, 0, n * sizeof(float)) != cudaSuccess) {
        return 2;
    }
    for (int a = 1; a < argc; ++a) {
        std::printf("\nsubmission %d %s\n", a, argv[a]);
        std::fflush(stdout);
        const auto started = Clock::now();
        CUmodule module{};
        CUfunction kernel{};
        CUresult result = cuModuleLoad(&module, argv[a]);
        if (result == CUDA_SUCCESS) {
            result = cuModuleGetFunction(&kernel, module, "kernel");
        }
        const double loaded = seconds_since(started);
        void* arguments[] = {&in, &n, &out};
        for (int launch = 0; launch < 3 && result == CUDA_SUCCESS; ++launch) {
            result = cuLaunchKernel(kernel, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, arguments, nullptr);
        }
        if (result == CUDA_SUCCESS) {
            result = cuCtxSynchronize();
        }
        if (module != nullptr) {
            cuModuleUnload(module);
        }
        const char* name = "?";
        cuGetErrorName(result, &name);
        std::printf("submission %d ended: %s, module loaded in %.3f s, all in %.3f s\n", a, name, loaded,
                    seconds_since(started));
        std::fflush(stdout);
    }
    return 0;
}
