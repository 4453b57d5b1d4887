// The checker process's one profiler of the GPU's counters (counter_profile.hpp), set up once and shared by the case
// loop (plan_loop.cpp, a round of profiles) and a speed test's own profile (case_calls.cuh). Host code only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "channel.hpp"
#include "counter_profile.hpp"
#include "run_mode.hpp"

namespace cugrade::harness {

inline double seconds_since(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The GPU step of a profile (counter_profile.hpp) with the GPU alone; waiting for it is added to `waited`, since it is
// not the profile's time.
inline GpuStep alone_step(double& waited) {
    return [&waited](const std::function<void()>& step) {
        const auto asked = std::chrono::steady_clock::now();
        const GpuAlone alone;
        waited += seconds_since(asked);
        step();
    };
}

// The process's one profiler of the GPU's counters, set up at its first use.
struct CheckerCounters {
    std::unique_ptr<CounterProfiler> profiler;
    std::string unavailable;     // why there is none
    double setup_seconds = 0.0;  // setting it up, until a profile counts it as its own
};
inline CheckerCounters& checker_counters() {
    static CheckerCounters counters;
    return counters;
}

// Sets up the profiler if it is not set up yet: loading CUPTI and configuring the metrics, CPU work that a speed test
// that may be profiled does before its turn alone, so that the turn holds no one back for it (on a GPU newer than
// CUPTI, reading which counters are free takes the GPU alone). In a round of profiles it stays attached from one
// profile to the next: the round has the GPU alone throughout. False if there is none.
inline bool set_up_checker_counters() {
    CheckerCounters& counters = checker_counters();
    if (!counters.profiler && counters.unavailable.empty()) {
        const auto started = std::chrono::steady_clock::now();
        double waited = 0.0;
        try {
            counters.profiler = std::make_unique<CounterProfiler>(counter_profiler_library(), alone_step(waited));
            counters.profiler->keep_attached(counters_round());
        } catch (const std::exception& e) {
            counters.unavailable = e.what();
        }
        counters.setup_seconds = seconds_since(started) - waited;
    }
    return counters.profiler != nullptr;
}

}  // namespace cugrade::harness
