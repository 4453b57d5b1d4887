// The CUDA that the course's code uses, for a C++ compiler and the CPU execution model (block_runner.hpp): the
// qualifiers, the built-ins, the intrinsics, the vector types and the runtime calls of a submission. A submission
// compiled with it has had its launches and `extern __shared__` declarations rewritten first (grader/src/
// cpu_source.cpp), on the same lines. Blocks run one at a time on one thread, so a __shared__ array can be a
// function's static (thread_local) variable: one per block, holding what the block before left, as garbage does.
#pragma once

#include <math.h>

#include <atomic>
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>

#include "capture/host_rules.hpp"
#include "cpu/block_runner.hpp"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))  // anywhere among the specifiers, as nvcc takes it
#define __shared__ static thread_local
#define __constant__ static

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

#define threadIdx (::cugrade::cpu::thread_idx())
#define blockIdx (::cugrade::cpu::block_idx())
#define blockDim (::cugrade::cpu::block_dim())
#define gridDim (::cugrade::cpu::grid_dim())
constexpr int warpSize = 32;

inline void __syncthreads() { cugrade::cpu::sync_threads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { cugrade::cpu::sync_warp(mask); }
template <class T>
T __shfl_sync(unsigned mask, T value, int lane, int width = warpSize) {
    return cugrade::cpu::shfl_sync(mask, value, lane, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = warpSize) {
    return cugrade::cpu::shfl_up_sync(mask, value, delta, width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = warpSize) {
    return cugrade::cpu::shfl_down_sync(mask, value, delta, width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = warpSize) {
    return cugrade::cpu::shfl_xor_sync(mask, value, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) { return cugrade::cpu::ballot_sync(mask, predicate != 0); }
inline int __any_sync(unsigned mask, int predicate) { return cugrade::cpu::any_sync(mask, predicate != 0); }
inline int __all_sync(unsigned mask, int predicate) { return cugrade::cpu::all_sync(mask, predicate != 0); }
template <class T>
unsigned __match_any_sync(unsigned mask, T value) {
    return cugrade::cpu::match_any_sync(mask, value);
}
// CUDA's min and max of two numbers of any arithmetic types, as its overloads pick them.
template <class A, class B>
std::common_type_t<A, B> min(A a, B b) {
    return b < a ? b : a;
}
template <class A, class B>
std::common_type_t<A, B> max(A a, B b) {
    return a < b ? b : a;
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
// A spinning thread's pause: the blocks run one after another on the CPU, so whatever it waits for is done.
inline void __nanosleep(unsigned) {}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// Atomics: the threads of a block switch only at meeting points, so a read-modify-write is never interrupted.
namespace cugrade::cpu {
template <class T, class Change>
T read_modify_write(T* address, Change change) {
    const T old = *address;
    *address = change(old);
    return old;
}
}  // namespace cugrade::cpu
template <class T, class U>
T atomicAdd(T* address, U value) {
    return cugrade::cpu::read_modify_write(address, [&](T old) { return static_cast<T>(old + value); });
}
template <class T, class U>
T atomicSub(T* address, U value) {
    return cugrade::cpu::read_modify_write(address, [&](T old) { return static_cast<T>(old - value); });
}
template <class T, class U>
T atomicMin(T* address, U value) {
    return cugrade::cpu::read_modify_write(address, [&](T old) { return value < old ? static_cast<T>(value) : old; });
}
template <class T, class U>
T atomicMax(T* address, U value) {
    return cugrade::cpu::read_modify_write(address, [&](T old) { return old < value ? static_cast<T>(value) : old; });
}
template <class T, class U>
T atomicExch(T* address, U value) {
    return cugrade::cpu::read_modify_write(address, [&](T) { return static_cast<T>(value); });
}
template <class T, class U, class V>
T atomicCAS(T* address, U compare, V value) {
    return cugrade::cpu::read_modify_write(
        address, [&](T old) { return old == static_cast<T>(compare) ? static_cast<T>(value) : old; });
}
inline unsigned atomicInc(unsigned* address, unsigned limit) {
    return cugrade::cpu::read_modify_write(address, [&](unsigned old) { return old >= limit ? 0u : old + 1; });
}

template <class T>
T __ldg(const T* address) {
    return *address;
}
template <class T>
T __ldcg(const T* address) {
    return *address;
}

inline unsigned __float_as_uint(float x) {
    unsigned bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits;
}
inline float __uint_as_float(unsigned bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}
inline int __float_as_int(float x) { return static_cast<int>(__float_as_uint(x)); }
inline float __int_as_float(int bits) { return __uint_as_float(static_cast<unsigned>(bits)); }
// The float intrinsics: round to nearest, as the CPU rounds; the fast approximations as the exact functions (their
// results differ from the GPU's in the last bits, which every tolerance allows).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float a, float b) { return powf(a, b); }

// Without CUDA's alignment: an array of 1025 floats ends where an inaccessible page begins, so it starts 4-aligned
// on the CPU, and a float4 read of it must not fault for that.
struct float2 {
    float x, y;
};
struct float4 {
    float x, y, z, w;
};
struct int2 {
    int x, y;
};
struct int4 {
    int x, y, z, w;
};
struct uint2 {
    unsigned x, y;
};
struct uint4 {
    unsigned x, y, z, w;
};
struct double2 {
    double x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

// The runtime calls of the course's contracts. Memory is the host's: pointers are plain pointers.
// CUDA's numbers, so that a name the harness maps from a number is the GPU's.
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchTimeout = 702,
    cudaErrorAssert = 710,
    cudaErrorHardwareStackError = 714,
    cudaErrorIllegalInstruction = 715,
    cudaErrorMisalignedAddress = 716,
    cudaErrorInvalidAddressSpace = 717,
    cudaErrorInvalidPc = 718,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801,
};
using cudaError = cudaError_t;
struct CUstream_st;
using cudaStream_t = CUstream_st*;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMaxThreadsPerMultiProcessor = 39,
};

namespace cugrade::cpu {
// The error cudaGetLastError returns and clears. A kernel that faulted leaves its error sticky, as it spoils a GPU's
// context: every later call returns it.
cudaError_t& last_error();
// cudaSuccess, or the error of a kernel that faulted, which every later runtime call returns.
cudaError_t& sticky_error();
const char* error_name(cudaError_t error);
// What cudaGetErrorString says: for a launch that faulted on the CPU, the fault (block_runner.hpp).
const char* error_string(cudaError_t error);
std::string& last_fault();
// Runs a launch of the kernel named `kernel_name`: its configuration checked as CUDA checks it (a refused one is the
// last error, and nothing runs), then `kernel(arguments...)` for every thread, under the schedule of this run
// (CUGRADE_CPU_SCHEDULE).
void launch_on_cpu(const char* kernel_name, dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
                   const std::function<void()>& kernel);

// cudaMalloc and cudaFree: each array its own pages, ending where an inaccessible page begins (and after one), so
// that a kernel's read or write past either end faults at that instruction (a MemoryFault, block_runner.hpp) and is
// reported with the array it missed. The pages lie in a range of addresses of their own (the "device's"), where the
// runner maps the arrays of a call at the same addresses (cpu/runner.hpp).
cudaError_t allocate(void** pointer, std::size_t bytes);
cudaError_t release(void* pointer);

// An array of cudaMalloc's as both processes of the self-check name it: where it begins and its size in bytes.
struct DeviceArray {
    std::uintptr_t begin = 0;
    std::size_t bytes = 0;
};
// The array that holds `address` (cudaMalloc's, or one the runner maps), or none (begin 0).
DeviceArray array_holding(std::uintptr_t address);
// The runner's side: the checker's array mapped at its own address, its pages private and zeroed and the pages
// around it left unmapped, and known as cudaMalloc's are (a fault beside it is told as in the checker). Returns why
// it cannot be mapped (its pages are taken), or "".
std::string map_array(const DeviceArray& array);
// Unmaps an array map_array mapped: nothing of a call's data stays in the runner.
void unmap_array(std::uintptr_t begin);

// In the submission's process (cpu/runner.hpp), its host code may do what its runner lets it do on the
// GPU, no more (capture/host_rules.hpp): a call that breaks a rule fails with cudaErrorNotSupported, and the first
// such refusal ("cudaMalloc: allocates device memory; ...") rejects the case after the call.
struct SubmissionCall {
    bool running = false;
    std::string refused;
};
SubmissionCall& submission_call();
inline cudaError_t refuse(const char* call, const std::string& why) {
    if (submission_call().refused.empty()) {
        submission_call().refused = std::string(call) + ": " + why;
    }
    return cudaErrorNotSupported;
}

// `kernel<<<grid, block, bytes, stream>>>(arguments)` is rewritten (grader/src/cpu/cpu_source.cpp) as
// `launcher(grid, block, bytes, stream).named("kernel")([](auto... a) { kernel(a...); }, arguments)`.
struct Launcher {
    dim3 grid, block;
    std::size_t dynamic_shared_bytes;
    const char* kernel_name = "a kernel";
    Launcher named(const char* name) const {
        Launcher named = *this;
        named.kernel_name = name;
        return named;
    }
    template <class Kernel, class... Arguments>
    void operator()(Kernel kernel, Arguments&&... arguments) const {
        // Evaluated once, on the host, and copied, as a launch copies them.
        std::tuple<std::decay_t<Arguments>...> copied(std::forward<Arguments>(arguments)...);
        launch_on_cpu(kernel_name, grid, block, dynamic_shared_bytes, [&] { std::apply(kernel, copied); });
    }
};
inline Launcher launcher(dim3 grid, dim3 block, std::size_t dynamic_shared_bytes = 0, cudaStream_t = nullptr) {
    return {grid, block, dynamic_shared_bytes};
}
}  // namespace cugrade::cpu

inline cudaError_t cudaGetLastError() {
    if (cugrade::cpu::sticky_error() != cudaSuccess) {
        return cugrade::cpu::sticky_error();
    }
    const cudaError_t error = cugrade::cpu::last_error();
    cugrade::cpu::last_error() = cudaSuccess;
    return error;
}
inline cudaError_t cudaPeekAtLastError() {
    return cugrade::cpu::sticky_error() != cudaSuccess ? cugrade::cpu::sticky_error() : cugrade::cpu::last_error();
}
inline const char* cudaGetErrorName(cudaError_t error) { return cugrade::cpu::error_name(error); }
inline const char* cudaGetErrorString(cudaError_t error) { return cugrade::cpu::error_string(error); }
inline cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t = nullptr) {
    if (cugrade::cpu::sticky_error() != cudaSuccess) {
        return cugrade::cpu::sticky_error();
    }
    std::memset(p, value, bytes);
    return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int value, std::size_t bytes) { return cudaMemsetAsync(p, value, bytes); }
namespace cugrade::cpu {
// Whether `bytes` from `pointer` lie within one array of cudaMalloc's (or one the runner mapped).
inline bool inside_array(const void* pointer, std::size_t bytes) {
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    const DeviceArray array = array_holding(address);
    return array.begin != 0 && address - array.begin <= array.bytes && bytes <= array.bytes - (address - array.begin);
}
inline cudaError_t copy(const char* call, void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) {
    if (sticky_error() != cudaSuccess) {
        return sticky_error();
    }
    if (submission_call().running) {
        if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost) {
            return refuse(call, host_rules::no_copy_back);
        }
        if (kind == cudaMemcpyHostToDevice && bytes > work_record::max_upload_bytes) {
            return refuse(call, host_rules::upload_too_large());
        }
        // Here every address is the host's, so a copy between device buffers (or of cudaMemcpyDefault, which the
        // GPU's replay treats as one) that leaves them would read device memory on the host: refused as the replay
        // refuses it.
        if (kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault) {
            if (bytes != 0 && !inside_array(to, bytes)) {
                return refuse(call, host_rules::copy_outside_to);
            }
            if (bytes != 0 && !inside_array(from, bytes)) {
                return refuse(call, host_rules::copy_outside_from);
            }
        }
    }
    std::memmove(to, from, bytes);
    return cudaSuccess;
}
}  // namespace cugrade::cpu
inline cudaError_t cudaMemcpyAsync(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind,
                                   cudaStream_t = nullptr) {
    return cugrade::cpu::copy("cudaMemcpyAsync", to, from, bytes, kind);
}
inline cudaError_t cudaMemcpy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) {
    return cugrade::cpu::copy("cudaMemcpy", to, from, bytes, kind);
}
inline cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
// Kernels run to their end inside their launch, so there is nothing to wait for but their errors.
inline cudaError_t cudaDeviceSynchronize() { return cudaPeekAtLastError(); }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaPeekAtLastError(); }
inline cudaError_t cudaStreamCreate(cudaStream_t* stream) {
    *stream = nullptr;
    return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline constexpr unsigned cudaDeviceScheduleBlockingSync = 4;
inline cudaError_t cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaMalloc(void** pointer, std::size_t bytes) {
    if (cugrade::cpu::submission_call().running) {
        return cugrade::cpu::refuse("cudaMalloc", cugrade::host_rules::no_allocation);
    }
    return cugrade::cpu::allocate(pointer, bytes);
}
template <class T>
cudaError_t cudaMalloc(T** pointer, std::size_t bytes) {
    return cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}
inline cudaError_t cudaFree(void* pointer) {
    if (cugrade::cpu::submission_call().running && pointer != nullptr) {
        return cugrade::cpu::refuse("cudaFree", cugrade::host_rules::no_allocation);
    }
    return cugrade::cpu::release(pointer);
}
// A small device: four SMs of 2048 threads, so that grids sized to the GPU stay small on the CPU.
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int) {
    *value = attribute == cudaDevAttrMultiProcessorCount ? 4 : attribute == cudaDevAttrMaxThreadsPerBlock ? 1024 : 2048;
    return cudaSuccess;
}
