// Sharing one GPU between the harness processes of a batch: correctness cases of several submissions run on it at
// once (shared), while a speed test samples with the GPU to itself (exclusive). A speed test that asks waits for the
// cases running now to finish, and no new case starts meanwhile, so speed tests are never starved.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace cugrade {

class GpuGate {
public:
    enum class Use { none, shared, exclusive };

    // One process's hold on the gate; released when it goes, or when it asks for something else.
    class Hold {
    public:
        explicit Hold(GpuGate* gate) : gate_(gate) {}
        ~Hold() { change(Use::none); }
        Hold(const Hold&) = delete;
        Hold& operator=(const Hold&) = delete;

        // Gives up what it holds, then waits until it has `use`. Without a gate it returns at once.
        void change(Use use);
        Use held() const { return held_; }

    private:
        GpuGate* gate_;
        Use held_ = Use::none;
    };

    // Holders now, and how long the GPU has been held exclusively in all (a batch's figure: the part of its time
    // that speed tests cannot share).
    std::size_t shared_holders() const;
    bool exclusive_held() const;
    double exclusive_seconds() const;

private:
    void acquire(Use use);
    void release(Use use);

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::size_t shared_ = 0;
    std::size_t exclusive_waiting_ = 0;
    bool exclusive_ = false;
    std::chrono::steady_clock::time_point exclusive_since_;
    std::chrono::steady_clock::duration exclusive_total_{};
};

}  // namespace cugrade
