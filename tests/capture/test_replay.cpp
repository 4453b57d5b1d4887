// Capture and replay end to end on a GPU, in one process: launches.cu's host code records its work through the
// capture runtime, the replayer loads its fatbinary and runs that work, and the buffers hold what the host code
// asked for. Exits 77 (skipped) where no GPU is visible.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "capture/capture_runtime.hpp"
#include "capture/replay.hpp"

extern "C" void permitted_calls(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream);

namespace {

int failures = 0;

void expect(bool ok, const char* what, int line) {
    if (!ok) {
        std::fprintf(stderr, "test_replay.cpp:%d: failed: %s\n", line, what);
        ++failures;
    }
}
#define EXPECT(condition) expect((condition), #condition, __LINE__)

void require(CUresult code, const char* call) {
    if (code != CUDA_SUCCESS) {
        const char* name = nullptr;
        cuGetErrorName(code, &name);
        std::fprintf(stderr, "%s failed: %s\n", call, name);
        std::exit(1);
    }
}

template <class T>
T* as_pointer(CUdeviceptr address) {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(address));
}

// Why the replayer refuses `work`, or "" when it takes it.
std::string refusal(const cugrade::replay::Replayer& replayer, const nlohmann::json& work,
                    const std::vector<cugrade::replay::DeviceRange>& ranges) {
    try {
        replayer.prepare(work, ranges);
        return "";
    } catch (const cugrade::replay::Refused& e) {
        return e.what();
    }
}

}  // namespace

int main() {
    int devices = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&devices) != CUDA_SUCCESS || devices == 0) {
        std::puts("no GPU visible: skipped");
        return 77;
    }
    CUdevice device;
    CUcontext context;
    require(cuDeviceGet(&device, 0), "cuDeviceGet");
    require(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    require(cuCtxSetCurrent(context), "cuCtxSetCurrent");

    std::ifstream file(CUGRADE_LAUNCHES_FATBIN, std::ios::binary);
    const std::vector<char> image{std::istreambuf_iterator<char>(file), {}};
    cugrade::replay::Replayer replayer(image.data());
    EXPECT(replayer.kernels().size() == 2);
    cugrade::capture::set_kernels(replayer.kernels());

    const std::size_t n = 1000, blocks = 4;
    std::vector<float> input(n);
    for (std::size_t i = 0; i < n; ++i) {
        input[i] = static_cast<float>(i);
    }
    CUdeviceptr input_d, result_d, scratch_d;
    require(cuMemAlloc(&input_d, n * sizeof(float)), "cuMemAlloc");
    require(cuMemAlloc(&result_d, sizeof(float)), "cuMemAlloc");
    require(cuMemAlloc(&scratch_d, 64 * sizeof(float)), "cuMemAlloc");
    require(cuMemcpyHtoD(input_d, input.data(), n * sizeof(float)), "cuMemcpyHtoD");
    require(cuMemsetD32(result_d, 0x7fbadbad, 1), "cuMemsetD32");

    permitted_calls(as_pointer<const float>(input_d), n, as_pointer<float>(result_d), as_pointer<float>(scratch_d),
                    nullptr);
    const auto taken = cugrade::capture::take_work();
    EXPECT(taken["refused"].empty());
    const std::vector<cugrade::replay::DeviceRange> ranges = {
        {input_d, n * sizeof(float), false}, {result_d, sizeof(float), true}, {scratch_d, 64 * sizeof(float), true}};
    const cugrade::replay::Work work = replayer.prepare(taken["work"], ranges);
    replayer.replay(work, nullptr);
    require(cuCtxSynchronize(), "cuCtxSynchronize");

    float result = 0.0f;
    std::vector<float> partials(blocks);
    require(cuMemcpyDtoH(&result, result_d, sizeof result), "cuMemcpyDtoH");
    require(cuMemcpyDtoH(partials.data(), scratch_d, blocks * sizeof(float)), "cuMemcpyDtoH");
    EXPECT(result == 2.5f);  // set to 0, then 2.5 added
    for (std::size_t b = 0; b < blocks; ++b) {
        EXPECT(partials[b] == input[b * 256] * 1.0f);  // weights[0], uploaded to __constant__ memory
    }

    // Work that reaches outside the case's buffers is refused before anything runs.
    nlohmann::json outside = taken["work"];
    outside[1]["address"] = input_d;  // the memset, aimed at the read-only input
    EXPECT(refusal(replayer, outside, ranges) == "sets memory outside the output and scratch buffers it is given");
    nlohmann::json wrong_arguments = taken["work"];
    wrong_arguments[2]["arguments"].erase(0);
    EXPECT(refusal(replayer, wrong_arguments, ranges) ==
           "launches _Z12partial_sumsILi256EEvPKfmPf with 2 arguments, not 3");

    std::printf("%s\n", failures == 0 ? "all passed" : "FAILED");
    return failures == 0 ? 0 : 1;
}
