#include "schedule/gpu_gate.hpp"

#include <algorithm>

namespace cugrade {

// True when shared work that was running when the first waiting speed test asked has run past admit_after, or any
// has run past the patience: a waiting speed test then lets new shared work in, since it would otherwise keep every
// other submission waiting behind one long case (admitting one short holder at a time behind it would leave them
// waiting too). What was let in lets no more in before the patience, so that speed tests are not starved.
bool GpuGate::any_long_holder(Clock::time_point now) const {
    const Clock::time_point first_asked = exclusive_asked_.empty() ? now : *exclusive_asked_.begin();
    return std::any_of(shared_.begin(), shared_.end(), [&](const auto& hold) {
        const auto held = now - hold.second.since;
        return held > patience_ || (hold.second.since < first_asked && held > admit_after_);
    });
}

bool GpuGate::holds_up_exclusive(std::uint64_t ticket) const {
    std::lock_guard lock(mutex_);
    const auto hold = shared_.find(ticket);
    return !exclusive_asked_.empty() && hold != shared_.end() && Clock::now() - hold->second.since > patience_;
}

// Called under the lock after every change of state.
void GpuGate::note_emptying(Clock::time_point now) {
    const bool emptying = !exclusive_asked_.empty() && !exclusive_;
    if (emptying && !emptying_) {
        emptying_since_ = now;
    } else if (!emptying && emptying_) {
        emptying_total_ += now - emptying_since_;
    }
    emptying_ = emptying;
}

std::uint64_t GpuGate::acquire(Use use, const std::string& label, Grant& grant) {
    std::unique_lock lock(mutex_);
    if (use == Use::shared) {
        // Behind any speed test that waits, unless what it waits for looks like a hang.
        while (exclusive_ || (!exclusive_asked_.empty() && !any_long_holder(Clock::now()))) {
            changed_.wait_for(lock, std::chrono::milliseconds(100));
        }
        const std::uint64_t ticket = next_ticket_++;
        shared_.emplace(ticket, SharedHold{Clock::now(), label});
        return ticket;
    }
    if (use == Use::exclusive) {
        const auto asked = Clock::now();
        const auto ask = exclusive_asked_.insert(asked);
        note_emptying(asked);
        changed_.wait(lock, [&] { return !exclusive_ && shared_.empty(); });
        exclusive_asked_.erase(ask);
        exclusive_ = true;
        exclusive_since_ = Clock::now();
        ++exclusive_grants_;
        note_emptying(exclusive_since_);
        grant = {std::chrono::duration<double>(exclusive_since_ - asked).count(), {}, 0.0};
        if (last_to_leave_at_ >= asked) {
            grant.last_to_leave = last_to_leave_;
            grant.last_to_leave_seconds = std::chrono::duration<double>(last_to_leave_held_).count();
        }
    }
    return 0;
}

void GpuGate::release(Use use, std::uint64_t ticket) {
    {
        std::lock_guard lock(mutex_);
        if (use == Use::shared) {
            if (const auto hold = shared_.find(ticket); hold != shared_.end()) {
                if (!exclusive_asked_.empty() && shared_.size() == 1) {
                    last_to_leave_ = hold->second.label;
                    last_to_leave_at_ = Clock::now();
                    last_to_leave_held_ = last_to_leave_at_ - hold->second.since;
                }
                shared_.erase(hold);
            }
        } else if (use == Use::exclusive) {
            const auto now = Clock::now();
            exclusive_ = false;
            exclusive_total_ += now - exclusive_since_;
            note_emptying(now);
        }
    }
    changed_.notify_all();
}

std::size_t GpuGate::shared_holders() const {
    std::lock_guard lock(mutex_);
    return shared_.size();
}

bool GpuGate::exclusive_held() const {
    std::lock_guard lock(mutex_);
    return exclusive_;
}

double GpuGate::exclusive_seconds() const {
    std::lock_guard lock(mutex_);
    return std::chrono::duration<double>(exclusive_total_).count();
}

std::size_t GpuGate::exclusive_grants() const {
    std::lock_guard lock(mutex_);
    return exclusive_grants_;
}

double GpuGate::emptying_seconds() const {
    std::lock_guard lock(mutex_);
    auto total = emptying_total_;
    if (emptying_) {
        total += Clock::now() - emptying_since_;
    }
    return std::chrono::duration<double>(total).count();
}

// Called under the lock: with nobody grading (or nobody left to start) and somebody waiting for a quiet GPU, the
// waiting go on together.
void GpuGate::open_round_if_quiet() {
    if ((placed_ == 0 || nothing_left_to_start_) && waiting_for_quiet_ > 0) {
        waiting_for_quiet_ = 0;
        ++round_;
        changed_.notify_all();
    }
}

void GpuGate::take_place() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return placed_ < places_; });
    ++placed_;
}

void GpuGate::give_place() {
    {
        std::lock_guard lock(mutex_);
        if (placed_ > 0) {
            --placed_;
        }
        open_round_if_quiet();
    }
    changed_.notify_all();
}

void GpuGate::return_place() {
    std::lock_guard lock(mutex_);
    ++placed_;
}

bool GpuGate::nobody_placed_or_nothing_left() const {
    std::lock_guard lock(mutex_);
    return placed_ == 0 || nothing_left_to_start_;
}

double GpuGate::wait_until_quiet(bool holds_place) {
    const auto asked = Clock::now();
    std::unique_lock lock(mutex_);
    if (holds_place && placed_ > 0) {
        --placed_;
    }
    ++waiting_for_quiet_;
    const std::uint64_t round = round_;
    open_round_if_quiet();
    changed_.notify_all();  // a place given up
    changed_.wait(lock, [&] { return round_ != round; });
    // Its place back at once, past the places if need be: those who went on together run their cases set aside
    // together, rather than some waiting for the last submissions of the class to end (the places count again for
    // whoever starts next).
    if (holds_place) {
        ++placed_;
    }
    return std::chrono::duration<double>(Clock::now() - asked).count();
}

void GpuGate::nothing_left_to_start() {
    {
        std::lock_guard lock(mutex_);
        nothing_left_to_start_ = true;
        open_round_if_quiet();
    }
    changed_.notify_all();
}

std::size_t GpuGate::quiet_rounds() const {
    std::lock_guard lock(mutex_);
    return round_;
}

bool GpuGate::Hold::keeps_speed_test_waiting() const {
    return gate_ != nullptr && held_ == Use::shared && gate_->holds_up_exclusive(ticket_);
}

void GpuGate::Hold::change(Use use) {
    if (gate_ == nullptr || use == held_) {
        return;
    }
    gate_->release(held_, ticket_);
    held_ = Use::none;
    ticket_ = gate_->acquire(use, label_, grant_);
    held_ = use;
}

}  // namespace cugrade
