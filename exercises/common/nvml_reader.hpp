// The checker's reading of the GPU's SM clock, temperature and clock event reasons from NVML during a speed test
// (gpu_conditions.hpp says what they mean). NVML is loaded at run time (dlopen of libnvidia-ml.so.1, which comes with
// the driver): a machine without it, or a GPU NVML cannot name, only has no reading. The declarations below are
// NVML's stable ABI, written out so that no header of NVML's is needed to build. The checker reads it, never the
// submission's process, and only outside the timed calls. Host code only.
#pragma once

#include <dlfcn.h>

#include <cstdint>

#include <cuda_runtime.h>

#include "gpu_conditions.hpp"

namespace cugrade::harness {

class NvmlReader {
public:
    // Loads NVML and finds the current CUDA device in it; CPU work, done before the speed test's turn at the GPU.
    NvmlReader() {
        library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (library_ == nullptr) {
            return;
        }
        const auto init = symbol<Status (*)()>("nvmlInit_v2");
        const auto by_bus = symbol<Status (*)(const char*, Device*)>("nvmlDeviceGetHandleByPciBusId_v2");
        clock_ = symbol<Status (*)(Device, int, unsigned*)>("nvmlDeviceGetClockInfo");
        temperature_ = symbol<Status (*)(Device, int, unsigned*)>("nvmlDeviceGetTemperature");
        reasons_ = symbol<Status (*)(Device, unsigned long long*)>("nvmlDeviceGetCurrentClocksEventReasons");
        if (reasons_ == nullptr) {
            reasons_ = symbol<Status (*)(Device, unsigned long long*)>("nvmlDeviceGetCurrentClocksThrottleReasons");
        }
        shutdown_ = symbol<Status (*)()>("nvmlShutdown");
        if (!init || !by_bus || !clock_ || !temperature_ || !reasons_ || !shutdown_ || init() != success) {
            return;
        }
        initialised_ = true;
        int device = 0;
        char bus_id[32] = {};
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess ||
            by_bus(bus_id, &device_) != success) {
            cudaGetLastError();  // a device query that failed is no error of the speed test's
            device_ = nullptr;
        }
    }
    ~NvmlReader() {
        if (initialised_) {
            shutdown_();
        }
        if (library_ != nullptr) {
            dlclose(library_);
        }
    }
    NvmlReader(const NvmlReader&) = delete;
    NvmlReader& operator=(const NvmlReader&) = delete;

    // Adds the GPU's state now to `conditions`; nothing where NVML cannot say.
    void read(gpu_conditions::Conditions& conditions) const {
        if (device_ == nullptr) {
            return;
        }
        unsigned clock_mhz = 0, temperature_c = 0;
        unsigned long long reasons = 0;
        if (clock_(device_, clock_sm, &clock_mhz) == success &&
            temperature_(device_, temperature_gpu, &temperature_c) == success &&
            reasons_(device_, &reasons) == success) {
            conditions.add(clock_mhz, temperature_c, reasons);
        }
    }

private:
    using Status = int;                        // nvmlReturn_t
    using Device = struct Opaque*;             // nvmlDevice_t
    static constexpr Status success = 0;       // NVML_SUCCESS
    static constexpr int clock_sm = 1;         // NVML_CLOCK_SM
    static constexpr int temperature_gpu = 0;  // NVML_TEMPERATURE_GPU

    template <class Function>
    Function symbol(const char* name) const {
        return reinterpret_cast<Function>(dlsym(library_, name));
    }

    void* library_ = nullptr;
    bool initialised_ = false;
    Device device_ = nullptr;
    Status (*clock_)(Device, int, unsigned*) = nullptr;
    Status (*temperature_)(Device, int, unsigned*) = nullptr;
    Status (*reasons_)(Device, unsigned long long*) = nullptr;
    Status (*shutdown_)() = nullptr;
};

}  // namespace cugrade::harness
