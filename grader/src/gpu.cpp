#include "cugrade/gpu.hpp"

#include <cuda.h>
#include <dlfcn.h>
#include <fmt/format.h>

namespace cugrade {

std::string GpuInfo::arch() const { return fmt::format("sm_{}{}", major, minor); }

GpuInfo probe_gpu() {
    GpuInfo info;
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr) {
        info.unavailable_reason = "no NVIDIA driver is installed (libcuda.so.1 could not be loaded)";
        return info;
    }
    using InitFn = CUresult (*)(unsigned);
    using CountFn = CUresult (*)(int*);
    using GetFn = CUresult (*)(CUdevice*, int);
    using NameFn = CUresult (*)(char*, int, CUdevice);
    using AttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
    const auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
    const auto count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
    const auto get = reinterpret_cast<GetFn>(dlsym(driver, "cuDeviceGet"));
    const auto name = reinterpret_cast<NameFn>(dlsym(driver, "cuDeviceGetName"));
    const auto attribute = reinterpret_cast<AttributeFn>(dlsym(driver, "cuDeviceGetAttribute"));
    if (!init || !count || !get || !name || !attribute) {
        info.unavailable_reason = "the NVIDIA driver library lacks the functions cugrade needs";
        return info;
    }
    int devices = 0;
    CUdevice device = 0;
    char device_name[256] = {};
    if (const CUresult status = init(0); status != CUDA_SUCCESS) {
        info.unavailable_reason = status == CUDA_ERROR_NO_DEVICE
                                      ? "no NVIDIA GPU is visible"
                                      : fmt::format("the NVIDIA driver failed to initialise (CUresult {})",
                                                    static_cast<int>(status));
        return info;
    }
    if (count(&devices) != CUDA_SUCCESS || devices == 0) {
        info.unavailable_reason = "no NVIDIA GPU is visible";
        return info;
    }
    if (get(&device, 0) != CUDA_SUCCESS || name(device_name, sizeof device_name - 1, device) != CUDA_SUCCESS ||
        attribute(&info.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) != CUDA_SUCCESS ||
        attribute(&info.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) != CUDA_SUCCESS) {
        info.unavailable_reason = "the NVIDIA driver could not describe GPU 0";
        return info;
    }
    info.available = true;
    info.name = device_name;
    return info;
}

}  // namespace cugrade
