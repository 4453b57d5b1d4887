// A batch's slow speed tests profiled in rounds. The checker's own counters cost most where they start: CUPTI's first
// start after attaching to a context, 0.3-0.5 s of the GPU held alone from every other submission, against about 0.07 s
// for each later profile of the same attachment (docs/performance-history.md). An attachment does not survive another
// context's fault, and a batch always has faults between two speed tests, so the profiles of several submissions are
// made together: each slow speed test is timed in its submission's own run and declined its counters there; its grading
// then waits here, without its place on the GPU, and one checker per exercise profiles every waiting speed test in one
// turn at the GPU alone and the machine's counters, attached once. One object for each GPU of a batch.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schedule/gpu_gate.hpp"

namespace cugrade {

class CaseRunner;

// One slow speed test to profile: the run loop of its submission (its runner, device code and options), the case,
// and how long its call took when timed (the profile's budget).
struct CountersRequest {
    CaseRunner* runner = nullptr;
    std::size_t case_index = 0;
    double call_ms = 0.0;
    std::string checker;       // its exercise's checker: the requests of one checker share its process in a round
    nlohmann::json profile;    // the round's answer: the checker's "kernel_profile", or {"problem": why}
    double job_seconds = 0.0;  // its own part of the round
    bool answered = false;
};

class CountersRounds {
public:
    // Profiles the requests of one round, each given its answer; what throws is every request's problem.
    using Round = std::function<void(const std::vector<CountersRequest*>&)>;

    // A round serves the requests of one checker (an exercise's): it opens when `round_size` of them wait, when the
    // oldest of them has waited `longest_wait`, or when nobody else is graded on the GPU or nothing is left to start
    // (gate: null for none). One round runs at a time.
    CountersRounds(GpuGate* gate, std::size_t round_size, std::chrono::duration<double> longest_wait, Round round);

    // Waits until a round has answered `request` (one of the waiting leads it), its place on the GPU given up
    // meanwhile where `holds_place`. Returns how long it waited, its own job included.
    double profile(CountersRequest& request, bool holds_place);

    std::size_t rounds() const;
    std::size_t requests() const;

private:
    // The checker whose round may open now, or null (under the lock).
    const std::string* round_to_open() const;

    GpuGate* gate_;
    const std::size_t round_size_;
    const std::chrono::steady_clock::duration longest_wait_;
    Round round_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::pair<CountersRequest*, std::chrono::steady_clock::time_point>> waiting_;
    bool running_ = false;
    std::size_t rounds_ = 0;
    std::size_t requests_ = 0;
};

}  // namespace cugrade
