// How this harness process runs its cases, beside grading them: what the plan says for a diagnosis's rerun. One
// harness process runs one plan, so each is the process's setting.
#pragma once

#include <string>

namespace cugrade::harness {

// Set for a rerun under compute-sanitizer (the plan's "bare_buffers"), which diagnoses and grades nothing: buffers
// then have no guard regions and no poison, so that a write past an output's end falls outside every allocation,
// where memcheck reports the line that wrote, and a read of scratch nothing wrote is one that initcheck sees.
inline bool& bare_buffers() {
    static bool bare = false;
    return bare;
}

// Set for a run under Nsight Compute (the plan's "profile"), which grades nothing: each case makes one call of the
// submission's, inside an NVTX range named "submission" so that the profiler sees only the submission's kernels, on
// one set of inputs with no snapshot of them (the profiler saves and restores every allocation around each replay of
// a kernel), and no timing follows.
inline bool& profile_only() {
    static bool profile = false;
    return profile;
}
inline constexpr const char* submission_range = "submission";

// Where CUPTI is (the plan's "counter_profiler"), set where diagnoses are on: a speed test below its top tier then
// profiles the submission's call itself (counter_profile.hpp). Empty: no such profile.
inline std::string& counter_profiler_library() {
    static std::string library;
    return library;
}

// Set for a checker that serves a batch's round of profiles (the plan's "counters_round", protocol.hpp): each job is
// a slow speed test of a submission already timed elsewhere, whose call it checks once and then profiles (no
// timing), the profiler attached from one job to the next while the grader holds the GPU alone and the machine's
// counters for the whole round. How long the call took when it was timed, for the profile's budget, comes with each
// job.
inline bool& counters_round() {
    static bool round = false;
    return round;
}
inline double& counters_round_call_ms() {
    static double call_ms = 0.0;
    return call_ms;
}

// Set once a call of the submission's has run in this process: from then on, a fault that surfaces in the harness's
// own work (an illegal address at its next synchronisation) is one the submission left behind, such as a write that
// landed in another buffer, since the harness's and the reference's work is tested without it.
inline bool& submission_has_run() {
    static bool ran = false;
    return ran;
}

}  // namespace cugrade::harness
