// Which NVIDIA GPU, if any, this machine can run submissions on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cugrade {

struct GpuInfo {
    bool available = false;
    std::string name;  // "NVIDIA H100 80GB HBM3"
    int major = 0;     // compute capability
    int minor = 0;
    std::string unavailable_reason;  // why not, when !available
    int index = 0;                   // as CUDA_VISIBLE_DEVICES presents the GPUs to cugrade
    std::string uuid;  // "GPU-…", what CUDA_VISIBLE_DEVICES names it by in child processes; may be empty
    std::uint64_t total_memory_bytes = 0;  // 0: unknown

    // The nvcc target for this GPU, e.g. "sm_90".
    std::string arch() const;
};

// The architecture submissions are compiled for when no GPU is visible and the course names none (course.yaml's
// `arch`): that of the GPUs courses grade on (H100, H200), so that the machine code read without a GPU (the
// contract's arithmetic rule, an `#if __CUDA_ARCH__ >= 800` branch) is the code that is graded.
inline constexpr const char* fallback_arch = "sm_90";

// Asks the NVIDIA driver (loaded at run time, so cugrade starts on machines without one) about device 0 as
// CUDA_VISIBLE_DEVICES presents it. Creates no CUDA context.
GpuInfo probe_gpu();

// Every GPU the driver shows, in its order; empty, with the reason, when there are none.
std::vector<GpuInfo> probe_gpus(std::string& unavailable_reason);

}  // namespace cugrade
