// Which NVIDIA GPU, if any, this machine can run submissions on.
#pragma once

#include <string>

namespace cugrade {

struct GpuInfo {
    bool available = false;
    std::string name;           // "NVIDIA H100 80GB HBM3"
    int major = 0;              // compute capability
    int minor = 0;
    std::string unavailable_reason;  // why not, when !available

    // The nvcc target for this GPU, e.g. "sm_90".
    std::string arch() const;
};

// The architecture submissions are compiled for when no GPU is visible: the oldest that CUDA 13 supports, so that
// compile errors are reported exactly as they would be with a GPU.
inline constexpr const char* fallback_arch = "sm_75";

// Asks the NVIDIA driver (loaded at run time, so cugrade starts on machines without one) about device 0 as
// CUDA_VISIBLE_DEVICES presents it. Creates no CUDA context.
GpuInfo probe_gpu();

}  // namespace cugrade
