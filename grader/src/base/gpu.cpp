#include "base/gpu.hpp"

#include <cuda.h>
#include <dlfcn.h>
#include <fmt/format.h>

namespace cugrade {

std::string GpuInfo::arch() const { return fmt::format("sm_{}{}", major, minor); }

namespace {

// The driver's functions cugrade asks about devices with, looked up at run time.
struct DriverCalls {
    using InitFn = CUresult (*)(unsigned);
    using CountFn = CUresult (*)(int*);
    using GetFn = CUresult (*)(CUdevice*, int);
    using NameFn = CUresult (*)(char*, int, CUdevice);
    using AttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
    using UuidFn = CUresult (*)(CUuuid*, CUdevice);
    using MemoryFn = CUresult (*)(size_t*, CUdevice);
    InitFn init = nullptr;
    CountFn count = nullptr;
    GetFn get = nullptr;
    NameFn name = nullptr;
    AttributeFn attribute = nullptr;
    UuidFn uuid = nullptr;
    MemoryFn memory = nullptr;
};

// "GPU-" and the UUID as nvidia-smi prints it, which CUDA_VISIBLE_DEVICES accepts.
std::string uuid_text(const CUuuid& uuid) {
    std::string text = "GPU-";
    for (int i = 0; i < 16; ++i) {
        text += fmt::format("{:02x}", static_cast<unsigned char>(uuid.bytes[i]));
        if (i == 3 || i == 5 || i == 7 || i == 9) {
            text += '-';
        }
    }
    return text;
}

}  // namespace

std::vector<GpuInfo> probe_gpus(std::string& unavailable_reason) {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr) {
        unavailable_reason = "no NVIDIA driver is installed (libcuda.so.1 could not be loaded)";
        return {};
    }
    DriverCalls calls;
    calls.init = reinterpret_cast<DriverCalls::InitFn>(dlsym(driver, "cuInit"));
    calls.count = reinterpret_cast<DriverCalls::CountFn>(dlsym(driver, "cuDeviceGetCount"));
    calls.get = reinterpret_cast<DriverCalls::GetFn>(dlsym(driver, "cuDeviceGet"));
    calls.name = reinterpret_cast<DriverCalls::NameFn>(dlsym(driver, "cuDeviceGetName"));
    calls.attribute = reinterpret_cast<DriverCalls::AttributeFn>(dlsym(driver, "cuDeviceGetAttribute"));
    calls.uuid = reinterpret_cast<DriverCalls::UuidFn>(dlsym(driver, "cuDeviceGetUuid_v2"));
    if (calls.uuid == nullptr) {
        calls.uuid = reinterpret_cast<DriverCalls::UuidFn>(dlsym(driver, "cuDeviceGetUuid"));
    }
    calls.memory = reinterpret_cast<DriverCalls::MemoryFn>(dlsym(driver, "cuDeviceTotalMem_v2"));
    if (!calls.init || !calls.count || !calls.get || !calls.name || !calls.attribute) {
        unavailable_reason = "the NVIDIA driver library lacks the functions cugrade needs";
        return {};
    }
    if (const CUresult status = calls.init(0); status != CUDA_SUCCESS) {
        unavailable_reason =
            status == CUDA_ERROR_NO_DEVICE
                ? "no NVIDIA GPU is visible"
                : fmt::format("the NVIDIA driver failed to initialise (CUresult {})", static_cast<int>(status));
        return {};
    }
    int devices = 0;
    if (calls.count(&devices) != CUDA_SUCCESS || devices == 0) {
        unavailable_reason = "no NVIDIA GPU is visible";
        return {};
    }
    std::vector<GpuInfo> gpus;
    for (int index = 0; index < devices; ++index) {
        GpuInfo info;
        CUdevice device = 0;
        char device_name[256] = {};
        CUuuid uuid{};
        if (calls.get(&device, index) != CUDA_SUCCESS ||
            calls.name(device_name, sizeof device_name - 1, device) != CUDA_SUCCESS ||
            calls.attribute(&info.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) != CUDA_SUCCESS ||
            calls.attribute(&info.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) != CUDA_SUCCESS) {
            info.unavailable_reason = fmt::format("the NVIDIA driver could not describe GPU {}", index);
        } else {
            info.available = true;
            info.name = device_name;
            info.index = index;
            if (calls.uuid != nullptr && calls.uuid(&uuid, device) == CUDA_SUCCESS) {
                info.uuid = uuid_text(uuid);
            }
            if (std::size_t bytes = 0; calls.memory != nullptr && calls.memory(&bytes, device) == CUDA_SUCCESS) {
                info.total_memory_bytes = bytes;
            }
        }
        gpus.push_back(std::move(info));
    }
    return gpus;
}

GpuInfo probe_gpu() {
    std::string reason;
    std::vector<GpuInfo> gpus = probe_gpus(reason);
    if (gpus.empty()) {
        GpuInfo info;
        info.unavailable_reason = reason;
        return info;
    }
    return gpus.front();
}

}  // namespace cugrade
