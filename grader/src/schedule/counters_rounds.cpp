#include "schedule/counters_rounds.hpp"

#include <utility>

namespace cugrade {

using Clock = std::chrono::steady_clock;

CountersRounds::CountersRounds(GpuGate* gate, std::size_t round_size, std::chrono::duration<double> longest_wait,
                               Round round)
    : gate_(gate),
      round_size_(round_size == 0 ? 1 : round_size),
      longest_wait_(std::chrono::duration_cast<Clock::duration>(longest_wait)),
      round_(std::move(round)) {}

const std::string* CountersRounds::round_to_open() const {
    if (running_ || waiting_.empty()) {
        return nullptr;
    }
    const bool anyone = gate_ == nullptr || gate_->nobody_placed_or_nothing_left();
    const auto now = Clock::now();
    for (const auto& [request, since] : waiting_) {  // the oldest first
        std::size_t waiting = 0;
        for (const auto& [other, other_since] : waiting_) {
            waiting += other->checker == request->checker;
        }
        if (anyone || waiting >= round_size_ || now - since >= longest_wait_) {
            return &request->checker;
        }
    }
    return nullptr;
}

double CountersRounds::profile(CountersRequest& request, bool holds_place) {
    const auto asked = Clock::now();
    const bool gives_place = holds_place && gate_ != nullptr;
    if (gives_place) {
        gate_->give_place();
    }
    {
        std::unique_lock lock(mutex_);
        waiting_.emplace_back(&request, asked);
        ++requests_;
        changed_.notify_all();
        while (!request.answered) {
            const std::string* checker = round_to_open();
            if (checker == nullptr) {
                // Also woken by time: the oldest's wait, and the gate's places, change without a word here.
                changed_.wait_for(lock, std::chrono::milliseconds(50));
                continue;
            }
            const std::string opened = *checker;
            std::vector<CountersRequest*> round;
            std::erase_if(waiting_, [&](const auto& waiting) {
                if (waiting.first->checker != opened) {
                    return false;
                }
                round.push_back(waiting.first);
                return true;
            });
            running_ = true;
            lock.unlock();
            try {
                round_(round);
            } catch (const std::exception& e) {
                for (CountersRequest* r : round) {
                    if (r->profile.is_null()) {
                        r->profile = {{"problem", std::string("the round of profiles failed: ") + e.what()}};
                    }
                }
            }
            lock.lock();
            for (CountersRequest* r : round) {
                if (r->profile.is_null()) {
                    r->profile = {{"problem", "the round of profiles gave no answer"}};
                }
                r->answered = true;
            }
            running_ = false;
            ++rounds_;
            changed_.notify_all();
        }
    }
    if (gives_place) {
        // Back past the places: what is left of its grading is short (the diagnosis, the scores), and the places
        // count again for whoever starts next.
        gate_->return_place();
    }
    return std::chrono::duration<double>(Clock::now() - asked).count();
}

std::size_t CountersRounds::rounds() const {
    std::lock_guard lock(mutex_);
    return rounds_;
}

std::size_t CountersRounds::requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
}

}  // namespace cugrade
