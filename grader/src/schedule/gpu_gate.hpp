// Sharing one GPU between the harness processes of a batch: correctness work of several submissions runs on it at
// once (shared), while a speed test samples with the GPU to itself (exclusive). A speed test that asks waits for the
// work running now to finish, and no new work starts meanwhile, so speed tests are not starved; but work that has
// held the GPU for a while does not hold every other submission back: while work that was running when the speed
// test asked has held the GPU past `admit_after` (a long case under a sanitizer, a kernel that hangs until its case's
// limit), new shared work is let in, and the speed test goes first once that work ends (what was let in does not let
// more in, unless it runs past the patience itself). Work past the patience is better set aside (case_runner.cpp):
// stopped, and run again once the GPU is quiet, when every submission graded on it waits for the same; the gate also
// keeps the count of submissions graded at once on its GPU.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace cugrade {

class GpuGate {
public:
    using Clock = std::chrono::steady_clock;
    enum class Use { none, shared, exclusive };

    // How a hold of the GPU alone was come by: how long it waited for it, and the shared work that left last before
    // it (its label, and how long it had held the GPU): what a speed test was kept waiting by.
    struct Grant {
        double waited_seconds = 0.0;
        std::string last_to_leave;
        double last_to_leave_seconds = 0.0;
    };

    // Shared work held longer than this is taken for a hang, and no longer keeps other work out while a speed test
    // waits for it. `places`: how many submissions are graded at once on this GPU (below). Shared work that was
    // running when a speed test asked, and has held the GPU longer than `admit_after` (at most the patience), no
    // longer keeps other work out either: three speed tests in four wait under 0.2 s for what runs, and where one
    // case ran long every other submission's new work waited with it, up to the patience (docs/batch.md).
    static constexpr Clock::duration default_patience = std::chrono::seconds(2);
    static constexpr Clock::duration default_admit_after = std::chrono::milliseconds(500);
    explicit GpuGate(Clock::duration patience = default_patience, unsigned places = 1,
                     Clock::duration admit_after = default_admit_after)
        : patience_(patience), admit_after_(std::min(admit_after, patience)), places_(places) {}

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
        // What the holder is doing (a trace's words: submission, case, tool), for the gate's figures.
        void set_label(std::string label) { label_ = std::move(label); }
        // The last time it got the GPU alone.
        const Grant& last_grant() const { return grant_; }
        // True while it holds the GPU shared, has held it past the gate's patience, and a speed test waits for it:
        // its work is best set aside until the GPU is quiet.
        bool keeps_speed_test_waiting() const;

    private:
        GpuGate* gate_;
        Use held_ = Use::none;
        std::uint64_t ticket_ = 0;  // its shared hold, while it has one
        std::string label_;
        Grant grant_;
    };

    // Holders now, and how long the GPU has been held exclusively in all (a batch's figure: the part of its time
    // that speed tests cannot share), how many times, and how long it was emptied for them: a speed test waiting
    // while the work that runs ends, no new work let in.
    std::size_t shared_holders() const;
    bool exclusive_held() const;
    double exclusive_seconds() const;
    std::size_t exclusive_grants() const;
    double emptying_seconds() const;
    Clock::duration patience() const { return patience_; }

    // Submissions graded at once on this GPU: a batch's worker takes a place before it grades a student's file and
    // gives it back after (with more workers than places, so that a submission waiting for a quiet GPU leaves its
    // place to another).
    unsigned places() const { return places_; }
    void take_place();
    void give_place();
    // A place taken back at once, past the places if need be, by a submission that gave its own up to wait and has
    // little left to do (counters_rounds.hpp).
    void return_place();
    // Whether no submission holds a place (every one waits for something), or nothing is left to start.
    bool nobody_placed_or_nothing_left() const;
    // A place held while it lives; without a gate, nothing.
    class Place {
    public:
        explicit Place(GpuGate* gate) : gate_(gate) {
            if (gate_ != nullptr) {
                gate_->take_place();
            }
        }
        ~Place() {
            if (gate_ != nullptr) {
                gate_->give_place();
            }
        }
        Place(const Place&) = delete;
        Place& operator=(const Place&) = delete;

    private:
        GpuGate* gate_;
    };
    // Waits until the GPU is quiet: every submission graded on it has work set aside and waits here too (when every
    // worker waits), or nothing is left to start (the end of a batch, where the last submissions' speed tests would
    // rather wait for the work set aside than have it wait for them). Those waiting then go on together, each taking
    // a place again at once if it had given one up (`holds_place`), even past the places: no one takes a place then
    // until enough are given back. Returns how long it waited.
    double wait_until_quiet(bool holds_place);
    void nothing_left_to_start();
    std::size_t quiet_rounds() const;

private:
    struct SharedHold {
        Clock::time_point since;
        std::string label;
    };
    std::uint64_t acquire(Use use, const std::string& label, Grant& grant);
    void release(Use use, std::uint64_t ticket);
    bool any_long_holder(Clock::time_point now) const;
    void note_emptying(Clock::time_point now);
    bool holds_up_exclusive(std::uint64_t ticket) const;
    void open_round_if_quiet();

    const Clock::duration patience_;
    const Clock::duration admit_after_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::map<std::uint64_t, SharedHold> shared_;  // each shared hold
    std::string last_to_leave_;  // the shared hold that left last while a speed test waited, and how long it held
    Clock::duration last_to_leave_held_{};
    Clock::time_point last_to_leave_at_;
    std::uint64_t next_ticket_ = 1;
    std::multiset<Clock::time_point> exclusive_asked_;  // when each speed test now waiting asked
    bool exclusive_ = false;
    Clock::time_point exclusive_since_;
    Clock::duration exclusive_total_{};
    std::size_t exclusive_grants_ = 0;
    bool emptying_ = false;  // a speed test waits, and the GPU is not yet its
    Clock::time_point emptying_since_;
    Clock::duration emptying_total_{};
    const unsigned places_;
    unsigned placed_ = 0;  // submissions in grading, not waiting for a quiet GPU
    std::size_t waiting_for_quiet_ = 0;
    bool nothing_left_to_start_ = false;
    std::uint64_t round_ = 0;  // quiet rounds opened: those waiting when one opens go on
};

}  // namespace cugrade
