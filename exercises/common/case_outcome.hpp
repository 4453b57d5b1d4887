// What one case reports (protocol.hpp's "result" record): its status and detail, what it measured, what a wrong
// answer is, a slow speed test's counters. Plain values: the case loop (plan_loop.cpp) turns them into JSON, so that
// an exercise's CUDA translation unit, which builds them, never parses a JSON library (a third of its compile).
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "explanation.hpp"
#include "plain_number.hpp"
#include "profiled_launch.hpp"
#include "protocol.hpp"

namespace cugrade::harness {

// A number or a flag as a case measured it; JSON's integer, unsigned, float and boolean kept apart, as the grader
// reads them.
class Measurement {
public:
    // clang-format off: 14 joins a requires clause to the declaration after it, 18 keeps it on its own line.
    template <class T>
    requires std::is_arithmetic_v<T> Measurement(T value) : value_(plain_number(value)) {}
    // clang-format on

    const PlainNumber& value() const { return value_; }

private:
    PlainNumber value_;
};

// A case's measurements by name, in the order they were first set.
class Measurements {
public:
    Measurements() = default;
    Measurements(std::initializer_list<std::pair<std::string, Measurement>> entries) {
        for (const auto& [name, value] : entries) {
            set(name, value);
        }
    }

    void set(const std::string& name, Measurement value) {
        for (auto& entry : entries_) {
            if (entry.first == name) {
                entry.second = value;
                return;
            }
        }
        entries_.emplace_back(name, value);
    }
    const std::vector<std::pair<std::string, Measurement>>& entries() const { return entries_; }

private:
    std::vector<std::pair<std::string, Measurement>> entries_;
};

// The counters of a slow speed test's call, made in the checker (case_calls.cuh, profile_slow_call), or why there
// are none: reported as the measurement "kernel_profile".
struct KernelProfile {
    bool unwanted = false;      // the grader wants none (a smaller case failed)
    std::string problem;        // why there is none; empty when it was made
    bool turn_refused = false;  // other profiles held the GPU's counters
    bool after_calls = false;   // it failed in the submission's calls, which may have left the context broken
    std::vector<ProfiledLaunch> launches;
    int passes = 0;
    double setup_seconds = 0.0;  // setting the profiler up, counted by the first profile after it
    double seconds = 0.0;
    std::map<std::string, double> steps;  // seconds by step (counter_profile.hpp)

    static KernelProfile none(std::string why) {
        KernelProfile profile;
        profile.problem = std::move(why);
        return profile;
    }
};

struct CaseOutcome {
    std::string status;
    std::string detail;
    Measurements measurements;
    std::optional<Explanation> explanation = std::nullopt;
    std::optional<KernelProfile> kernel_profile = std::nullopt;
    // The submission wrote past an output's end: its stray writes may have landed in memory the harness uses later
    // (a kernel's parameters, another buffer), so the cases after this one run in a fresh process, where they
    // cannot fail for what this one did.
    bool fresh_process_after = false;

    static CaseOutcome passed(Measurements measurements = {}) {
        return {protocol::status_passed, "", std::move(measurements)};
    }
    static CaseOutcome wrong_answer(std::string detail, std::optional<Explanation> explanation = std::nullopt) {
        return {protocol::status_wrong_answer, std::move(detail), {}, std::move(explanation)};
    }
};

}  // namespace cugrade::harness
