#include "block_runner.hpp"

#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>

#include <csetjmp>
#include <csignal>
#include <ucontext.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

namespace cugrade::cpu {

namespace {

namespace ctx = boost::context;

// Shared memory beyond what a GPU block may have is a kernel's mistake, not a reason to allocate without end.
constexpr std::size_t shared_limit = 228 * 1024;
constexpr std::uint32_t garbage = 0x7fbadbadu;  // what shared memory holds before a thread writes it

enum class State { ready, at_barrier, at_warp_op, done };

struct Thread {
    Dim3 idx;
    unsigned linear = 0;
    State state = State::ready;
    ctx::fiber fiber;  // resumes this thread
    ctx::fiber back;   // resumes the block's scheduler, from inside the thread
    std::exception_ptr error;
    // The warp operation this thread waits at, and its result once the warp met.
    WarpOp op = WarpOp::sync;
    unsigned mask = 0;
    std::uint64_t value = 0;
    int argument = 0;
    int width = 0;
    std::uint64_t result = 0;
};

struct Block {
    Dim3 idx;
    Dim3 dim;
    Dim3 grid;
    std::vector<Thread> threads;
    std::vector<std::uint32_t> dynamic_shared;  // the launch's dynamic shared memory, in words of garbage
};

thread_local Block* running_block = nullptr;
thread_local Thread* running_thread = nullptr;

// Where a fault in a kernel's thread goes back to (launch's frame, on the CPU thread's own stack), and what it was.
thread_local sigjmp_buf* fault_exit = nullptr;
thread_local AccessFault caught_fault;

void on_memory_fault(int signal, siginfo_t* info, void* context) {
    if (fault_exit == nullptr || running_thread == nullptr) {
        // Not a kernel's thread: the program ends as it would have without this handler.
        struct sigaction fallback {};
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        sigaction(signal, &fallback, nullptr);
        if (info->si_code <= 0) {
            raise(signal);  // sent, not a fault: the instruction would not fault again
        }
        return;
    }
    caught_fault = {};
    caught_fault.address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    const auto* machine = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
    caught_fault.instruction = static_cast<std::uintptr_t>(machine->uc_mcontext.gregs[REG_RIP]);
    // The page fault's error code: bit 1 is set for a write.
    caught_fault.access =
        (machine->uc_mcontext.gregs[REG_ERR] & 2) != 0 ? AccessFault::Access::write : AccessFault::Access::read;
#elif defined(__aarch64__)
    caught_fault.instruction = static_cast<std::uintptr_t>(machine->uc_mcontext.pc);
#else
    (void)machine;
#endif
    caught_fault.block = running_block->idx;
    caught_fault.thread = running_thread->idx;
    siglongjmp(*fault_exit, 1);
}

// Catches SIGSEGV and SIGBUS for as long as a launch runs, on a stack of their own (a fiber's may be what overflowed),
// and puts back what was there before.
class FaultCatcher {
public:
    FaultCatcher() {
        thread_local std::unique_ptr<char[]> signal_stack;
        if (!signal_stack) {
            signal_stack = std::make_unique<char[]>(signal_stack_bytes);
            stack_t stack{};
            stack.ss_sp = signal_stack.get();
            stack.ss_size = signal_stack_bytes;
            sigaltstack(&stack, nullptr);
        }
        struct sigaction action {};
        action.sa_sigaction = on_memory_fault;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        sigaction(SIGSEGV, &action, &previous_segv_);
        sigaction(SIGBUS, &action, &previous_bus_);
    }
    ~FaultCatcher() {
        sigaction(SIGSEGV, &previous_segv_, nullptr);
        sigaction(SIGBUS, &previous_bus_, nullptr);
    }
    FaultCatcher(const FaultCatcher&) = delete;
    FaultCatcher& operator=(const FaultCatcher&) = delete;

private:
    static constexpr std::size_t signal_stack_bytes = 64 * 1024;
    struct sigaction previous_segv_ {};
    struct sigaction previous_bus_ {};
};

Thread& current() {
    if (running_thread == nullptr) {
        throw std::logic_error("a CUDA built-in was used outside a kernel running on the CPU");
    }
    return *running_thread;
}

std::string describe(const Dim3& d) {
    return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

std::string hex(unsigned mask) {
    std::ostringstream text;
    text << "0x" << std::hex << mask;
    return text.str();
}

// Back to the scheduler, until it resumes this thread.
void suspend(Thread& t, State waiting) {
    t.state = waiting;
    t.back = std::move(t.back).resume();
}

std::vector<unsigned> resume_order(std::size_t count, const LaunchOptions& options, std::uint64_t block_number) {
    std::vector<unsigned> order(count);
    std::iota(order.begin(), order.end(), 0u);
    if (options.schedule == Schedule::reverse) {
        std::reverse(order.begin(), order.end());
    } else if (options.schedule == Schedule::shuffled) {
        std::mt19937_64 random(options.seed * 0x9e3779b97f4a7c15ull + block_number);
        std::shuffle(order.begin(), order.end(), random);
    }
    return order;
}

std::string where(const Block& block) { return "block " + describe(block.idx); }

std::string op_name(WarpOp op) {
    switch (op) {
        case WarpOp::sync: return "__syncwarp";
        case WarpOp::shfl: return "__shfl_sync";
        case WarpOp::shfl_up: return "__shfl_up_sync";
        case WarpOp::shfl_down: return "__shfl_down_sync";
        case WarpOp::shfl_xor: return "__shfl_xor_sync";
        case WarpOp::ballot: return "__ballot_sync";
        case WarpOp::any: return "__any_sync";
        case WarpOp::all: return "__all_sync";
        case WarpOp::match_any: return "__match_any_sync";
    }
    return "a warp operation";
}

// The lane a shuffle reads for `lane`, or `lane` itself where CUDA returns the caller's own value.
unsigned source_lane(const Thread& t, unsigned lane) {
    const unsigned width = static_cast<unsigned>(t.width);
    const unsigned first = lane / width * width;
    switch (t.op) {
        case WarpOp::shfl: return first + static_cast<unsigned>(t.argument) % width;
        case WarpOp::shfl_up: return lane >= first + static_cast<unsigned>(t.argument) ? lane - t.argument : lane;
        case WarpOp::shfl_down: return lane + t.argument < first + width ? lane + t.argument : lane;
        case WarpOp::shfl_xor: {
            const unsigned other = lane ^ static_cast<unsigned>(t.argument);
            return other < first + width ? other : lane;
        }
        default: return lane;
    }
}

// Releases the lanes of warp `warp` that met at one warp operation with one mask. Returns whether any were released;
// throws where the GPU would misbehave.
bool release_warp(Block& block, unsigned warp) {
    const unsigned first = warp * warp_size;
    const unsigned lanes = static_cast<unsigned>(std::min<std::size_t>(warp_size, block.threads.size() - first));
    bool released = false;
    for (unsigned lane = 0; lane < lanes; ++lane) {
        Thread& t = block.threads[first + lane];
        if (t.state != State::at_warp_op) {
            continue;
        }
        // Said only when a fault is: this runs at every meeting of every warp.
        const auto call = [&] {
            return op_name(t.op) + "(" + hex(t.mask) + ", ...) of thread " + describe(t.idx) + " in " + where(block);
        };
        if (lanes < warp_size && (t.mask >> lanes) != 0) {
            throw KernelFault(call() + " names lanes past the warp's " + std::to_string(lanes) + " threads");
        }
        if ((t.mask >> lane & 1u) == 0) {
            throw KernelFault(call() + " leaves out the calling lane " + std::to_string(lane) + " from its mask");
        }
        bool met = true;
        for (unsigned other = 0; other < lanes && met; ++other) {
            if ((t.mask >> other & 1u) == 0) {
                continue;
            }
            const Thread& o = block.threads[first + other];
            if (o.state == State::done) {
                throw KernelFault(call() + " waits for lane " + std::to_string(other) + ", which had returned");
            }
            met = o.state == State::at_warp_op && o.mask == t.mask && o.op == t.op;
        }
        if (!met) {
            continue;
        }
        std::uint64_t votes = 0;
        for (unsigned other = 0; other < lanes; ++other) {
            const Thread& o = block.threads[first + other];
            if ((t.mask >> other & 1u) != 0 && o.value != 0) {
                votes |= 1ull << other;
            }
        }
        for (unsigned other = 0; other < lanes; ++other) {
            if ((t.mask >> other & 1u) == 0) {
                continue;
            }
            Thread& o = block.threads[first + other];
            switch (o.op) {
                case WarpOp::sync: o.result = 0; break;
                case WarpOp::ballot: o.result = votes; break;
                case WarpOp::any: o.result = votes != 0; break;
                case WarpOp::all: o.result = votes == (t.mask & ((lanes == 32 ? 0ull : 1ull << lanes) - 1)); break;
                case WarpOp::match_any: {
                    std::uint64_t peers = 0;
                    for (unsigned peer = 0; peer < lanes; ++peer) {
                        if ((t.mask >> peer & 1u) != 0 && block.threads[first + peer].value == o.value) {
                            peers |= 1ull << peer;
                        }
                    }
                    o.result = peers;
                    break;
                }
                default: {
                    const unsigned from = source_lane(o, other);
                    if ((t.mask >> from & 1u) == 0) {
                        throw KernelFault(op_name(o.op) + "(" + hex(t.mask) + ", ...) of thread " + describe(o.idx) +
                                          " in " + where(block) + " reads lane " + std::to_string(from) +
                                          ", which is not in its mask");
                    }
                    o.result = block.threads[first + from].value;
                }
            }
        }
        for (unsigned other = 0; other < lanes; ++other) {
            if ((t.mask >> other & 1u) != 0) {
                block.threads[first + other].state = State::ready;
            }
        }
        released = true;
    }
    return released;
}

std::string count_of(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

void run_block(Block& block, const LaunchOptions& options, std::uint64_t block_number,
               const std::function<void()>& kernel, ctx::pooled_fixedsize_stack& stacks) {
    const std::vector<unsigned> order = resume_order(block.threads.size(), options, block_number);
    for (Thread& t : block.threads) {
        t.fiber = ctx::fiber(std::allocator_arg, stacks, [&t, &kernel](ctx::fiber&& scheduler) {
            t.back = std::move(scheduler);
            try {
                kernel();
            } catch (const ctx::detail::forced_unwind&) {
                throw;
            } catch (...) {
                t.error = std::current_exception();
            }
            t.state = State::done;
            return std::move(t.back);
        });
    }
    const std::size_t total = block.threads.size();
    const std::size_t warps = (total + warp_size - 1) / warp_size;
    for (;;) {
        for (const unsigned i : order) {
            Thread& t = block.threads[i];
            while (t.state == State::ready) {
                running_thread = &t;
                t.fiber = std::move(t.fiber).resume();
                running_thread = nullptr;
                if (t.error) {
                    std::rethrow_exception(t.error);
                }
                // A warp operation whose lanes have all arrived goes on at once, as on the GPU.
                if (t.state == State::at_warp_op) {
                    release_warp(block, t.linear / warp_size);
                }
            }
        }
        std::size_t done = 0, at_barrier = 0, ready = 0;
        for (const Thread& t : block.threads) {
            done += t.state == State::done;
            at_barrier += t.state == State::at_barrier;
            ready += t.state == State::ready;
        }
        if (done == total) {
            return;
        }
        if (ready > 0) {
            continue;  // lanes that a warp operation released after their turn in this round
        }
        bool released = false;
        for (unsigned warp = 0; warp < warps; ++warp) {
            released = release_warp(block, warp) || released;
        }
        if (released) {
            continue;
        }
        if (at_barrier + done == total) {
            if (done > 0) {
                throw KernelFault("__syncthreads() in " + where(block) + " was reached by " +
                                  count_of(at_barrier, "thread", "threads") + " of " + std::to_string(total) +
                                  ": the other " + std::to_string(done) +
                                  " had returned, so the GPU would wait for them forever or go on without them (a "
                                  "barrier inside a branch that not every thread of the block takes)");
            }
            for (Thread& t : block.threads) {
                t.state = State::ready;
            }
            continue;
        }
        const auto waiting = std::find_if(block.threads.begin(), block.threads.end(),
                                          [](const Thread& t) { return t.state == State::at_warp_op; });
        throw KernelFault(op_name(waiting->op) + "(" + hex(waiting->mask) + ", ...) of thread " +
                          describe(waiting->idx) + " in " + where(block) +
                          " waits for lanes that are at another warp operation, with another mask, or at "
                          "__syncthreads(): the threads of the block wait for one another forever");
    }
}

}  // namespace

void launch(Dim3 grid, Dim3 block_dim, const LaunchOptions& options, const std::function<void()>& kernel) {
    if (block_dim.count() == 0 || block_dim.count() > 1024) {
        throw KernelFault("a block of " + std::to_string(block_dim.count()) +
                          " threads: cudaErrorInvalidConfiguration (1 to 1024 threads a block)");
    }
    if (grid.count() == 0) {
        throw KernelFault("a grid of no blocks: cudaErrorInvalidConfiguration");
    }
    if (options.dynamic_shared_bytes > shared_limit) {
        throw KernelFault(std::to_string(options.dynamic_shared_bytes) +
                          " bytes of dynamic shared memory: cudaErrorInvalidValue (at most " +
                          std::to_string(shared_limit) + ")");
    }
    ctx::pooled_fixedsize_stack stacks(options.stack_bytes);
    const FaultCatcher catcher;
    std::uint64_t block_number = 0;
    for (unsigned bz = 0; bz < grid.z; ++bz) {
        for (unsigned by = 0; by < grid.y; ++by) {
            for (unsigned bx = 0; bx < grid.x; ++bx, ++block_number) {
                auto block = std::make_unique<Block>();
                block->idx = {bx, by, bz};
                block->dim = block_dim;
                block->grid = grid;
                block->dynamic_shared.assign((options.dynamic_shared_bytes + 3) / 4, garbage);
                block->threads.resize(block_dim.count());
                unsigned linear = 0;
                for (unsigned z = 0; z < block_dim.z; ++z) {
                    for (unsigned y = 0; y < block_dim.y; ++y) {
                        for (unsigned x = 0; x < block_dim.x; ++x, ++linear) {
                            block->threads[linear].idx = {x, y, z};
                            block->threads[linear].linear = linear;
                        }
                    }
                }
                sigjmp_buf exit_point;
                if (sigsetjmp(exit_point, 1) != 0) {
                    fault_exit = nullptr;
                    running_thread = nullptr;
                    running_block = nullptr;
                    // The block's threads stay where they stood, their fibers never resumed or unwound (one of them
                    // stopped inside an instruction): the block is left behind, as the process will be.
                    (void)block.release();
                    throw MemoryFault(caught_fault);
                }
                running_block = block.get();
                fault_exit = &exit_point;
                try {
                    run_block(*block, options, block_number, kernel, stacks);
                } catch (...) {
                    fault_exit = nullptr;
                    running_block = nullptr;
                    throw;
                }
                fault_exit = nullptr;
                running_block = nullptr;
            }
        }
    }
}

const Dim3& thread_idx() { return current().idx; }
const Dim3& block_idx() {
    current();
    return running_block->idx;
}
const Dim3& block_dim() {
    current();
    return running_block->dim;
}
const Dim3& grid_dim() {
    current();
    return running_block->grid;
}

void sync_threads() { suspend(current(), State::at_barrier); }

void* dynamic_shared_memory() {
    current();
    return running_block->dynamic_shared.data();
}

std::uint64_t warp_exchange(WarpOp op, unsigned mask, std::uint64_t value, int argument, int width) {
    Thread& t = current();
    if (width <= 0 || width > static_cast<int>(warp_size) || (width & (width - 1)) != 0) {
        throw KernelFault(op_name(op) + " with width " + std::to_string(width) +
                          ": the width must be a power of 2 from 1 to 32");
    }
    t.op = op;
    t.mask = mask;
    t.value = value;
    t.argument = argument;
    t.width = width;
    suspend(t, State::at_warp_op);
    return t.result;
}

}  // namespace cugrade::cpu
