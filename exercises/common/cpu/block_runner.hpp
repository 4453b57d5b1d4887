// CUDA's execution model on the CPU, for the self-check without an NVIDIA GPU (docs/cpu-mode.md): the threads of a
// block run as fibers on one CPU thread, switching only where CUDA threads must meet (__syncthreads, warp
// operations), in an order the caller chooses, so that a result that depends on the order threads run in shows as a
// difference between orders. What the GPU would not survive (a barrier not every thread of the block reaches, a warp
// operation whose lanes are not all there, threads that wait for one another forever) is a KernelFault that says
// which block, which threads and which operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace cugrade::cpu {

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
    std::size_t count() const { return std::size_t{x} * y * z; }
};

// The order in which the runnable threads of a block are resumed after each meeting point.
enum class Schedule { forward, reverse, shuffled };

// What the GPU would hang on or misbehave at, found while a kernel ran on the CPU.
class KernelFault : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A thread of the kernel touched memory that is not there (a SIGSEGV or SIGBUS while it ran): every array of
// cuda_on_cpu.hpp ends at an inaccessible page, so a read or write just past one lands here. The launch stops at
// that instruction, as a faulting kernel stops on the GPU.
struct AccessFault {
    enum class Access { read, write, unknown };
    std::uintptr_t address = 0;      // what it touched
    std::uintptr_t instruction = 0;  // where in the program it was
    Access access = Access::unknown;
    Dim3 block, thread;
};
class MemoryFault : public std::runtime_error {
public:
    explicit MemoryFault(const AccessFault& fault) : std::runtime_error("a memory fault in a kernel"), fault(fault) {}
    AccessFault fault;
};

struct LaunchOptions {
    Schedule schedule = Schedule::forward;
    std::uint64_t seed = 0;                // for Schedule::shuffled
    std::size_t dynamic_shared_bytes = 0;  // the launch's third argument
    std::size_t stack_bytes = 64 * 1024;   // of each thread's fiber
};

// Runs `kernel` once for every thread of the grid, block after block. Throws KernelFault, MemoryFault, or what the
// kernel threw.
void launch(Dim3 grid, Dim3 block, const LaunchOptions& options, const std::function<void()>& kernel);

// The built-ins of the thread that runs now. Calling them outside a kernel is a logic_error.
const Dim3& thread_idx();
const Dim3& block_idx();
const Dim3& block_dim();
const Dim3& grid_dim();
constexpr unsigned warp_size = 32;

// __syncthreads(): every thread of the block must reach it before any goes on.
void sync_threads();

// extern __shared__: the launch's dynamic shared memory, filled with garbage for each block, as on the GPU. (A static
// __shared__ array is a function's static thread_local variable: blocks run one at a time on a thread.)
void* dynamic_shared_memory();

// The warp operations, with CUDA's meanings. Each waits for every lane of `mask` to make the same call.
enum class WarpOp { sync, shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all, match_any };
std::uint64_t warp_exchange(WarpOp op, unsigned mask, std::uint64_t value, int argument, int width);

inline void sync_warp(unsigned mask) { warp_exchange(WarpOp::sync, mask, 0, 0, warp_size); }

template <class T>
T warp_shuffle(WarpOp op, unsigned mask, T value, int argument, int width) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t));
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    bits = warp_exchange(op, mask, bits, argument, width);
    T result;
    std::memcpy(&result, &bits, sizeof(T));
    return result;
}
template <class T>
T shfl_sync(unsigned mask, T value, int src_lane, int width = warp_size) {
    return warp_shuffle(WarpOp::shfl, mask, value, src_lane, width);
}
template <class T>
T shfl_up_sync(unsigned mask, T value, unsigned delta, int width = warp_size) {
    return warp_shuffle(WarpOp::shfl_up, mask, value, static_cast<int>(delta), width);
}
template <class T>
T shfl_down_sync(unsigned mask, T value, unsigned delta, int width = warp_size) {
    return warp_shuffle(WarpOp::shfl_down, mask, value, static_cast<int>(delta), width);
}
template <class T>
T shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = warp_size) {
    return warp_shuffle(WarpOp::shfl_xor, mask, value, lane_mask, width);
}
inline unsigned ballot_sync(unsigned mask, bool predicate) {
    return static_cast<unsigned>(warp_exchange(WarpOp::ballot, mask, predicate ? 1 : 0, 0, warp_size));
}
inline bool any_sync(unsigned mask, bool predicate) {
    return warp_exchange(WarpOp::any, mask, predicate ? 1 : 0, 0, warp_size) != 0;
}
inline bool all_sync(unsigned mask, bool predicate) {
    return warp_exchange(WarpOp::all, mask, predicate ? 1 : 0, 0, warp_size) != 0;
}
// The lanes of `mask` whose value has the same bits as this lane's: one meeting of the warp.
template <class T>
unsigned match_any_sync(unsigned mask, T value) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t));
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    return static_cast<unsigned>(warp_exchange(WarpOp::match_any, mask, bits, 0, warp_size));
}

}  // namespace cugrade::cpu
