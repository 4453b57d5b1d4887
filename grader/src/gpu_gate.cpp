#include "cugrade/gpu_gate.hpp"

namespace cugrade {

void GpuGate::acquire(Use use) {
    std::unique_lock lock(mutex_);
    if (use == Use::shared) {
        // Behind any speed test that waits: a stream of correctness cases never keeps one out.
        changed_.wait(lock, [&] { return !exclusive_ && exclusive_waiting_ == 0; });
        ++shared_;
    } else if (use == Use::exclusive) {
        ++exclusive_waiting_;
        changed_.wait(lock, [&] { return !exclusive_ && shared_ == 0; });
        --exclusive_waiting_;
        exclusive_ = true;
        exclusive_since_ = std::chrono::steady_clock::now();
    }
}

void GpuGate::release(Use use) {
    {
        std::lock_guard lock(mutex_);
        if (use == Use::shared) {
            --shared_;
        } else if (use == Use::exclusive) {
            exclusive_ = false;
            exclusive_total_ += std::chrono::steady_clock::now() - exclusive_since_;
        }
    }
    changed_.notify_all();
}

std::size_t GpuGate::shared_holders() const {
    std::lock_guard lock(mutex_);
    return shared_;
}

bool GpuGate::exclusive_held() const {
    std::lock_guard lock(mutex_);
    return exclusive_;
}

void GpuGate::Hold::change(Use use) {
    if (gate_ == nullptr || use == held_) {
        return;
    }
    gate_->release(held_);
    held_ = Use::none;
    gate_->acquire(use);
    held_ = use;
}

double GpuGate::exclusive_seconds() const {
    std::lock_guard lock(mutex_);
    return std::chrono::duration<double>(exclusive_total_).count();
}

}  // namespace cugrade
