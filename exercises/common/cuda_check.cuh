// CUDA calls checked in one place (file:line, the error's name and the call's text), and the device memory a harness
// owns. Every other harness file builds on these.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "channel.hpp"

namespace cugrade::harness {

// A CUDA call failed. `submission_call` says whether the submission's own work failed (its launches surface at the
// synchronisation after its call) or the harness's.
struct CudaFailure : std::runtime_error {
    CudaFailure(cudaError_t code, const std::string& what, std::string submission_call = "", std::string note = "")
        : std::runtime_error(what), code(code), submission_call(std::move(submission_call)), note(std::move(note)) {}
    cudaError_t code;
    std::string submission_call;  // "call 2 of 3" when a call of the entry point failed; empty for the harness's own
    std::string note;             // what the submission did to cause it, when the harness knows

    // What the report says: the submission's call and the error, or where in the harness it failed.
    std::string detail() const {
        const std::string error = std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ")";
        return submission_call.empty() ? std::string(what())
                                       : submission_call + ": " + error + (note.empty() ? "" : ": " + note);
    }
};

// The submission broke a rule of the exercise while it ran (the report's "rejected"). `channel_lost`: what its process
// sent left the channel to it unreadable (the CPU self-check's runner, cpu/remote_submission.cpp), so the cases left
// run with a fresh one.
struct RuleBroken : std::runtime_error {
    explicit RuleBroken(const std::string& what, bool channel_lost = false)
        : std::runtime_error(what), channel_lost(channel_lost) {}
    bool channel_lost = false;
};

// Errors after which the context is unusable: each later call returns them again. One of these that surfaces in the
// harness's own call came from a kernel that faulted before it.
inline bool corrupts_context(cudaError_t code) {
    switch (code) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorIllegalInstruction:
        case cudaErrorMisalignedAddress:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorHardwareStackError:
        case cudaErrorAssert:
        case cudaErrorLaunchTimeout: return true;
        default: return false;
    }
}

// Whether the context still works after `code`, which the submission's call failed with: an error it returns again (a
// fault's) spoils it for good, while one that was only that call's (a launch refused for its shape, a grid of no
// blocks) leaves it usable once cleared, and costs no fresh process.
inline bool context_still_works(cudaError_t code) {
    if (corrupts_context(code)) {
        return false;
    }
    SharedGpu gpu;
    cudaGetLastError();
    return cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess;
}

// The file's name without its folders: a report names no path of the course's.
inline const char* file_name(const char* path) {
    const char* name = path;
    for (const char* c = path; *c != '\0'; ++c) {
        if (*c == '/') {
            name = c + 1;
        }
    }
    return name;
}

inline void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
    if (code != cudaSuccess) {
        std::ostringstream message;
        message << file_name(file) << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code) << " ("
                << cudaGetErrorString(code) << ")";
        throw CudaFailure(code, message.str());
    }
}

#define CUGRADE_CUDA_CHECK(call) ::cugrade::harness::check_cuda((call), #call, __FILE__, __LINE__)

// Where a harness's device memory comes from. Pooled (the default on a GPU): from the device's default pool, in the
// order of the legacy stream, kept by the process once freed, so that the next case takes it again without mapping
// it and a free waits for nothing (cudaFree waits for the whole device: one more turn among the processes that share
// the GPU); a harness's peak memory is then held until it ends. Not pooled (on the CPU, and under compute-sanitizer
// or a profiler: the plan's "separate_allocations"): each buffer is an allocation of its own, so that a stray access
// past one falls outside every allocation, where memcheck reports it, rather than in a neighbour from the pool. Set
// once, before the first buffer.
inline bool& pooled_device_memory() {
#ifdef CUGRADE_CPU
    static bool pooled = false;
#else
    static bool pooled = true;
#endif
    return pooled;
}

// Once the context is made: where the device has no memory pools (an old driver, some virtualised GPUs), buffers are
// allocations of their own; otherwise the pool keeps what it is given back (its release threshold at most).
inline void set_up_device_memory() {
#ifndef CUGRADE_CPU
    if (!pooled_device_memory()) {
        return;
    }
    int pools = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0) != cudaSuccess || pools == 0) {
        cudaGetLastError();
        pooled_device_memory() = false;
        return;
    }
    cudaMemPool_t pool{};
    CUGRADE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    unsigned long long keep_all = ~0ULL;
    CUGRADE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
#endif
}

// Gives the pool's freed memory back to the device, once every free queued before has happened.
inline void release_pooled_device_memory() {
#ifndef CUGRADE_CPU
    cudaMemPool_t pool{};
    if (cudaDeviceSynchronize() == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess) {
        cudaMemPoolTrimTo(pool, 0);
    }
#endif
}

// Device memory of the harness's own. Pooled, it is allocated and freed in the order of the legacy default stream,
// which every harness stream waits for (they are blocking streams): it is reused only after the work queued before
// its free.
template <class T>
class DeviceBuffer {
public:
    // Allocating and freeing are the GPU's work too (the driver clears memory between one owner and the next with
    // the GPU's copy engines), so in a batch they wait while a speed test has the GPU alone rather than slow the
    // copies it measures against.
    explicit DeviceBuffer(std::size_t count) : count_(count), pooled_(pooled_device_memory()) {
        SharedGpu gpu;
        // An empty allocation may return null; one element keeps every buffer a real address.
        const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(T);
#ifndef CUGRADE_CPU
        if (pooled_) {
            if (cudaMallocAsync(&data_, bytes, cudaStreamLegacy) == cudaSuccess) {
                return;
            }
            // The pool may hold freed memory in pieces too small for this buffer: given back, it is asked once more,
            // so that a pooled harness needs no more memory than its largest case.
            cudaGetLastError();
            release_pooled_device_memory();
            CUGRADE_CUDA_CHECK(cudaMallocAsync(&data_, bytes, cudaStreamLegacy));
            return;
        }
#endif
        CUGRADE_CUDA_CHECK(cudaMalloc(&data_, bytes));
    }
    ~DeviceBuffer() {
        SharedGpu gpu;
#ifndef CUGRADE_CPU
        if (pooled_) {
            cudaFreeAsync(data_, cudaStreamLegacy);
            return;
        }
#endif
        cudaFree(data_);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    T* get() const { return data_; }
    std::size_t size() const { return count_; }

    std::vector<T> to_host() const {
        std::vector<T> host(count_);
        if (count_ > 0) {
            CUGRADE_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
        }
        return host;
    }

private:
    T* data_ = nullptr;
    std::size_t count_;
    bool pooled_;
};

// One element of device memory, read or written from the host: a check's first wrong element, a planted extreme.
template <class T>
T read_element(const T* device_pointer) {
    T value{};
    CUGRADE_CUDA_CHECK(cudaMemcpy(&value, device_pointer, sizeof value, cudaMemcpyDeviceToHost));
    return value;
}

// `count` elements of device memory from `first` on, read from the host: the terms an explanation looks at.
template <class T>
std::vector<T> read_range(const T* device_pointer, std::size_t first, std::size_t count) {
    std::vector<T> values(count);
    if (count > 0) {
        CUGRADE_CUDA_CHECK(
            cudaMemcpy(values.data(), device_pointer + first, count * sizeof(T), cudaMemcpyDeviceToHost));
    }
    return values;
}

template <class T>
void set_element(T* device_pointer, T value) {
    CUGRADE_CUDA_CHECK(cudaMemcpy(device_pointer, &value, sizeof value, cudaMemcpyHostToDevice));
}

// A grid for a grid-stride loop over n elements: enough blocks of 256 to cover them, at most `most`.
inline unsigned grid_for(std::size_t n, unsigned most = 4096) {
    return static_cast<unsigned>(std::clamp<std::size_t>((n + 255) / 256, 1, most));
}

}  // namespace cugrade::harness
