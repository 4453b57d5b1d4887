// The capture runtime (capture_runtime.hpp): the CUDA runtime entry points a submission's host code may call, each
// recording work or answering from what the checker said, none touching a GPU.
#include "capture_runtime.hpp"

#include <cuda_occupancy.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "host_rules.hpp"
#include "work_record.hpp"

namespace cugrade::capture {
namespace {

struct Symbol {
    std::string name;
    std::size_t size = 0;
};

struct LaunchConfiguration {
    dim3 grid;
    dim3 block;
    std::size_t shared_bytes = 0;
    void* stream = nullptr;
};

// The runtime's state: registrations, the checker's tables, and the work of the current call.
struct Recorder {
    std::mutex mutex;
    std::unordered_map<const void*, std::string> kernel_names;  // host stub -> device name
    std::unordered_map<const void*, Symbol> symbols;            // host shadow -> device name and size
    std::map<std::string, KernelInfo> kernels;
    DeviceInfo device;
    bool have_device = false;
    std::vector<LaunchConfiguration> configurations;  // <<<...>>> pushes, popped by the launch stub
    nlohmann::json work = nlohmann::json::array();
    nlohmann::json refused = nlohmann::json::array();
    cudaError_t last_error = cudaSuccess;
    int next_event = 1;

    // The device name of one of the submission's kernels, from its host stub; null for anything else.
    const std::string* kernel_name(const void* host_function) const {
        const auto found = kernel_names.find(host_function);
        return found == kernel_names.end() ? nullptr : &found->second;
    }

    cudaError_t fail(cudaError_t error) {
        last_error = error;
        return error;
    }
    cudaError_t refuse(const char* call, const std::string& why) {
        refused.push_back({{"call", call}, {"why", why}});
        return fail(cudaErrorNotSupported);
    }
};

Recorder& recorder() {
    static Recorder instance;
    return instance;
}

std::uint64_t address(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer); }

cudaError_t record_launch(const char* call, const void* host_function, dim3 grid, dim3 block, void** arguments,
                          std::size_t shared_bytes, bool cooperative) {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    const std::string* name = r.kernel_name(host_function);
    if (name == nullptr) {
        return r.refuse(call, "launches something that is not one of its own kernels");
    }
    const auto info = r.kernels.find(*name);
    if (info == r.kernels.end()) {
        return r.refuse(call, "launches kernel " + *name + ", whose device code the grader did not find");
    }
    nlohmann::json argument_bytes = nlohmann::json::array();
    for (std::size_t i = 0; i < info->second.parameter_sizes.size(); ++i) {
        argument_bytes.push_back(work_record::to_hex(arguments[i], info->second.parameter_sizes[i]));
    }
    r.work.push_back({{"op", "kernel"},
                      {"name", *name},
                      {"grid", {grid.x, grid.y, grid.z}},
                      {"block", {block.x, block.y, block.z}},
                      {"shared_bytes", shared_bytes},
                      {"arguments", std::move(argument_bytes)},
                      {"cooperative", cooperative}});
    return cudaSuccess;
}

cudaError_t record_memset(void* pointer, std::size_t pitch, int value, std::size_t width, std::size_t height) {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    r.work.push_back({{"op", "memset"},
                      {"address", address(pointer)},
                      {"value", value & 0xff},
                      {"pitch", pitch},
                      {"width", width},
                      {"height", height}});
    return cudaSuccess;
}

cudaError_t record_copy(const char* call, void* to, std::size_t to_pitch, const void* from, std::size_t from_pitch,
                        std::size_t width, std::size_t height, cudaMemcpyKind kind) {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    switch (kind) {
        case cudaMemcpyDeviceToDevice:
        case cudaMemcpyDefault:
            r.work.push_back({{"op", "copy"},
                              {"to", address(to)},
                              {"from", address(from)},
                              {"to_pitch", to_pitch},
                              {"from_pitch", from_pitch},
                              {"width", width},
                              {"height", height}});
            return cudaSuccess;
        case cudaMemcpyHostToDevice: {
            if (height != 1) {
                return r.refuse(call, host_rules::no_2d_upload);
            }
            if (width > work_record::max_upload_bytes) {
                return r.refuse(call, host_rules::upload_too_large());
            }
            r.work.push_back({{"op", "upload"}, {"to", address(to)}, {"data", work_record::to_hex(from, width)}});
            return cudaSuccess;
        }
        default: return r.refuse(call, host_rules::no_copy_back);
    }
}

cudaError_t record_symbol_upload(const char* call, const void* symbol, const void* data, std::size_t bytes,
                                 std::size_t offset, cudaMemcpyKind kind) {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    const auto found = r.symbols.find(symbol);
    if (found == r.symbols.end()) {
        return r.refuse(call, "copies to something that is not one of its own __constant__ or __device__ symbols");
    }
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDefault) {
        return r.refuse(call, "copies into a symbol from device memory; write it from a kernel");
    }
    if (offset > found->second.size || bytes > found->second.size - offset) {
        return r.fail(cudaErrorInvalidValue);
    }
    if (bytes > work_record::max_upload_bytes) {
        return r.refuse(call, host_rules::upload_too_large());
    }
    r.work.push_back({{"op", "symbol_upload"},
                      {"symbol", found->second.name},
                      {"offset", offset},
                      {"data", work_record::to_hex(data, bytes)}});
    return cudaSuccess;
}

cudaError_t refuse(const char* call, const std::string& why) {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    return r.refuse(call, why);
}

const KernelInfo* kernel_info(const void* host_function) {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    const std::string* name = r.kernel_name(host_function);
    if (name == nullptr) {
        return nullptr;
    }
    const auto info = r.kernels.find(*name);
    return info == r.kernels.end() ? nullptr : &info->second;
}

using host_rules::no_allocation;
using host_rules::no_host_reads;

}  // namespace

void set_device(const DeviceInfo& device) {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    r.device = device;
    r.have_device = true;
}

void set_kernels(std::map<std::string, KernelInfo> kernels) {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    r.kernels = std::move(kernels);
}

std::vector<std::string> registered_kernels() {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    std::vector<std::string> names;
    for (const auto& [stub, name] : r.kernel_names) {
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

nlohmann::json take_work() {
    Recorder& r = recorder();
    std::lock_guard lock(r.mutex);
    nlohmann::json taken = {{"work", std::move(r.work)}, {"refused", std::move(r.refused)}};
    r.work = nlohmann::json::array();
    r.refused = nlohmann::json::array();
    r.configurations.clear();
    return taken;
}

}  // namespace cugrade::capture

using cugrade::capture::recorder;
namespace capture = cugrade::capture;

// nvcc's registration and launch code (crt/host_runtime.h, crt/device_functions.h).
extern "C" {

void** __cudaRegisterFatBinary(void*) {
    static void* handle = nullptr;
    return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
char __cudaInitModule(void**) { return 1; }

void __cudaRegisterFunction(void**, const char* host_function, char* device_function, const char*, int, uint3*, uint3*,
                            dim3*, dim3*, int*) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    r.kernel_names[host_function] = device_function;
}

void __cudaRegisterVar(void**, char* host_variable, char*, const char* device_name, int, size_t size, int, int) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    r.symbols[host_variable] = {device_name, size};
}

void __cudaRegisterManagedVar(void**, void**, char*, const char* device_name, int, size_t, int, int) {
    capture::refuse("__managed__",
                    std::string("declares managed memory (") + device_name + "); use the buffers you are given");
}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_bytes, struct CUstream_st* stream) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    r.configurations.push_back({grid, block, shared_bytes, stream});
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_bytes, void* stream) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    if (r.configurations.empty()) {
        return cudaErrorInvalidConfiguration;
    }
    const auto configuration = r.configurations.back();
    r.configurations.pop_back();
    *grid = configuration.grid;
    *block = configuration.block;
    *shared_bytes = configuration.shared_bytes;
    *static_cast<void**>(stream) = configuration.stream;
    return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_function) {
    *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(host_function));
    return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** arguments, size_t shared_bytes,
                               cudaStream_t) {
    return capture::record_launch("<<<...>>>", reinterpret_cast<const void*>(kernel), grid, block, arguments,
                                  shared_bytes, false);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** arguments, size_t shared_bytes,
                                    cudaStream_t stream) {
    return __cudaLaunchKernel(kernel, grid, block, arguments, shared_bytes, stream);
}

}  // extern "C"

// The public runtime API: launches and memory operations recorded, queries answered, the rest refused.
cudaError_t cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** arguments, size_t shared_bytes,
                             cudaStream_t) {
    return capture::record_launch("cudaLaunchKernel", function, grid, block, arguments, shared_bytes, false);
}
cudaError_t cudaLaunchCooperativeKernel(const void* function, dim3 grid, dim3 block, void** arguments,
                                        size_t shared_bytes, cudaStream_t) {
    return capture::record_launch("cudaLaunchCooperativeKernel", function, grid, block, arguments, shared_bytes, true);
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* function, void** arguments) {
    if (config->numAttrs != 0) {
        return capture::refuse("cudaLaunchKernelExC", "launches with attributes, which the grader does not replay");
    }
    return capture::record_launch("cudaLaunchKernelExC", function, config->gridDim, config->blockDim, arguments,
                                  config->dynamicSmemBytes, false);
}

cudaError_t cudaMemset(void* pointer, int value, size_t bytes) {
    return capture::record_memset(pointer, bytes, value, bytes, 1);
}
cudaError_t cudaMemsetAsync(void* pointer, int value, size_t bytes, cudaStream_t) {
    return capture::record_memset(pointer, bytes, value, bytes, 1);
}
cudaError_t cudaMemset2D(void* pointer, size_t pitch, int value, size_t width, size_t height) {
    return capture::record_memset(pointer, pitch, value, width, height);
}
cudaError_t cudaMemset2DAsync(void* pointer, size_t pitch, int value, size_t width, size_t height, cudaStream_t) {
    return capture::record_memset(pointer, pitch, value, width, height);
}
cudaError_t cudaMemcpy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
    return capture::record_copy("cudaMemcpy", to, bytes, from, bytes, bytes, 1, kind);
}
cudaError_t cudaMemcpyAsync(void* to, const void* from, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
    return capture::record_copy("cudaMemcpyAsync", to, bytes, from, bytes, bytes, 1, kind);
}
cudaError_t cudaMemcpy2D(void* to, size_t to_pitch, const void* from, size_t from_pitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
    return capture::record_copy("cudaMemcpy2D", to, to_pitch, from, from_pitch, width, height, kind);
}
cudaError_t cudaMemcpy2DAsync(void* to, size_t to_pitch, const void* from, size_t from_pitch, size_t width,
                              size_t height, cudaMemcpyKind kind, cudaStream_t) {
    return capture::record_copy("cudaMemcpy2DAsync", to, to_pitch, from, from_pitch, width, height, kind);
}
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* data, size_t bytes, size_t offset, cudaMemcpyKind kind) {
    return capture::record_symbol_upload("cudaMemcpyToSymbol", symbol, data, bytes, offset, kind);
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* data, size_t bytes, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t) {
    return capture::record_symbol_upload("cudaMemcpyToSymbolAsync", symbol, data, bytes, offset, kind);
}
cudaError_t cudaMemcpyFromSymbol(void*, const void*, size_t, size_t, cudaMemcpyKind) {
    return capture::refuse("cudaMemcpyFromSymbol", capture::no_host_reads);
}
cudaError_t cudaMemcpyFromSymbolAsync(void*, const void*, size_t, size_t, cudaMemcpyKind, cudaStream_t) {
    return capture::refuse("cudaMemcpyFromSymbolAsync", capture::no_host_reads);
}
cudaError_t cudaGetSymbolAddress(void**, const void*) {
    return capture::refuse("cudaGetSymbolAddress", "takes a symbol's device address; pass the symbol to kernels by "
                                                   "name instead");
}
cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    const auto found = r.symbols.find(symbol);
    if (found == r.symbols.end()) {
        return r.fail(cudaErrorInvalidSymbol);
    }
    *size = found->second.size;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void**, size_t) { return capture::refuse("cudaMalloc", capture::no_allocation); }
cudaError_t cudaMallocAsync(void**, size_t, cudaStream_t) {
    return capture::refuse("cudaMallocAsync", capture::no_allocation);
}
cudaError_t cudaMallocPitch(void**, size_t*, size_t, size_t) {
    return capture::refuse("cudaMallocPitch", capture::no_allocation);
}
cudaError_t cudaFree(void* pointer) {
    return pointer == nullptr ? cudaSuccess : capture::refuse("cudaFree", capture::no_allocation);
}
cudaError_t cudaFreeAsync(void* pointer, cudaStream_t) {
    return pointer == nullptr ? cudaSuccess : capture::refuse("cudaFreeAsync", capture::no_allocation);
}
cudaError_t cudaMemGetInfo(size_t*, size_t*) {
    return capture::refuse("cudaMemGetInfo", "asks for free device memory, which the grader does not say");
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes*, const void*) {
    return capture::refuse("cudaPointerGetAttributes", "inspects pointers; the contract says what each one is");
}

// Calls the contracts forbid, present so that such a submission links and the static checks can name the call
// (api_policy.cpp); reached anyway, they are refused.
cudaError_t cudaSetDevice(int) {
    return capture::refuse("cudaSetDevice", "selects a device; the grader chooses the GPU");
}
cudaError_t cudaStreamCreate(cudaStream_t*) {
    return capture::refuse("cudaStreamCreate", "creates a stream; launch every kernel on the stream you are given");
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t*, unsigned) {
    return capture::refuse("cudaStreamCreateWithFlags",
                           "creates a stream; launch every kernel on the stream you are given");
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t*, unsigned, int) {
    return capture::refuse("cudaStreamCreateWithPriority",
                           "creates a stream; launch every kernel on the stream you are given");
}
cudaError_t cudaStreamDestroy(cudaStream_t) {
    return capture::refuse("cudaStreamDestroy", "destroys a stream; launch every kernel on the stream you are given");
}

// Work on one stream runs in order, and the checker waits for all of it: waiting here changes nothing.
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t* event) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    *event = reinterpret_cast<cudaEvent_t>(static_cast<std::uintptr_t>(r.next_event++));
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) { return cudaEventCreate(event); }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventRecordWithFlags(cudaEvent_t, cudaStream_t, unsigned) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t) {
    return capture::refuse("cudaEventElapsedTime", "times its own work; the grader does the timing");
}

cudaError_t cudaGetLastError() {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    return std::exchange(r.last_error, cudaSuccess);
}
cudaError_t cudaPeekAtLastError() {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    return r.last_error;
}
const char* cudaGetErrorName(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorInvalidSymbol: return "cudaErrorInvalidSymbol";
        case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
        case cudaErrorNotSupported: return "cudaErrorNotSupported";
        default: return "cudaErrorUnknown";
    }
}
const char* cudaGetErrorString(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorInvalidSymbol: return "invalid device symbol";
        case cudaErrorInvalidDeviceFunction: return "invalid device function";
        case cudaErrorNotSupported: return "operation not supported by the grader";
        default: return "unknown error";
    }
}

cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* count) {
    *count = 1;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    if (device != 0 || !r.have_device) {
        return r.fail(cudaErrorInvalidDevice);
    }
    *properties = r.device.properties;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    const auto found = r.device.attributes.find(static_cast<int>(attribute));
    if (device != 0 || found == r.device.attributes.end()) {
        return r.fail(device != 0 ? cudaErrorInvalidDevice : cudaErrorInvalidValue);
    }
    *value = found->second;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetLimit(size_t*, cudaLimit) {
    return capture::refuse("cudaDeviceGetLimit", "asks for a device limit, which the grader does not say");
}
cudaError_t cudaDriverGetVersion(int* version) {
    *version = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void* function) {
    const capture::KernelInfo* info = capture::kernel_info(function);
    if (info == nullptr) {
        return cudaErrorInvalidDeviceFunction;
    }
    *attributes = info->attributes;
    return cudaSuccess;
}
cudaError_t cudaFuncGetName(const char** name, const void* function) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    const std::string* found = r.kernel_name(function);
    if (found == nullptr) {
        return r.fail(cudaErrorInvalidDeviceFunction);
    }
    *name = found->c_str();
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void* function, cudaFuncAttribute attribute, int value) {
    auto& r = recorder();
    std::lock_guard lock(r.mutex);
    const std::string* name = r.kernel_name(function);
    if (name == nullptr) {
        return r.fail(cudaErrorInvalidDeviceFunction);
    }
    r.work.push_back(
        {{"op", "function_attribute"}, {"name", *name}, {"attribute", static_cast<int>(attribute)}, {"value", value}});
    return cudaSuccess;
}
cudaError_t cudaFuncSetCacheConfig(const void*, cudaFuncCache) { return cudaSuccess; }

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* function, int block_size,
                                                                   size_t dynamic_shared_bytes, unsigned flags) {
    const capture::KernelInfo* info = capture::kernel_info(function);
    auto& r = recorder();
    if (info == nullptr || !r.have_device) {
        return cudaErrorInvalidDeviceFunction;
    }
    const cudaOccDeviceProp device(r.device.properties);
    cudaOccFuncAttributes attributes(info->attributes);
    if ((flags & cudaOccupancyDisableCachingOverride) != 0) {
        attributes.partitionedGCConfig = PARTITIONED_GC_OFF;
    }
    const cudaOccDeviceState state;
    cudaOccResult result{};
    if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &device, &attributes, &state, block_size,
                                                dynamic_shared_bytes) != CUDA_OCC_SUCCESS) {
        return cudaErrorInvalidValue;
    }
    *blocks = result.activeBlocksPerMultiprocessor;
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* function, int block_size,
                                                          size_t dynamic_shared_bytes) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, function, block_size, dynamic_shared_bytes,
                                                                  cudaOccupancyDefault);
}
