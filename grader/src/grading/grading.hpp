// The grading pipeline for one exercise of one submission: build -> inspect -> run -> score. Every driver (`check`,
// `grade`, `bench`) grades through it, with one context that holds what a batch loads once: the course, the
// toolchain, the GPU and the cache.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "course/exercise.hpp"
#include "base/gpu.hpp"
#include "schedule/gpu_gate.hpp"
#include "report/report.hpp"
#include "course/rubric.hpp"
#include "run/run_trace.hpp"
#include "sandbox/sandbox.hpp"
#include "course/submission.hpp"
#include "build/toolchain.hpp"

namespace cugrade {

class CheckerPool;       // grader/src/schedule/checker_pool.hpp
class SameCodeProfiles;  // grader/src/schedule/same_code_profiles.hpp
class CountersRounds;    // grader/src/schedule/counters_rounds.hpp

struct GradingContext {
    Course course;
    Toolchain toolchain;
    GpuInfo gpu;
    std::filesystem::path cache_dir;  // empty: no cache
    std::uint64_t cache_max_bytes = 0;
    // What no build or run of a submission may see, should it lie under something the sandbox shows (the sandbox
    // shows only an allowlist of the host anyway): the course, the cache, the folder of submissions, the home folder.
    std::vector<std::filesystem::path> hidden;
    std::function<void(const std::string&)> progress;  // a line per step, for people waiting, or empty
    unsigned concurrent_jobs = 1;  // builds or runs a batch has at once: each sandbox leaves room for the others'
    // A batch that shares its GPUs sets these: the gate of the GPU this context grades on (correctness cases beside
    // other submissions', speed tests alone), and that GPU's name for CUDA_VISIBLE_DEVICES in the harness. Null and
    // empty: the GPU is this grading's alone, as CUDA_VISIBLE_DEVICES presents it to cugrade.
    std::shared_ptr<GpuGate> gpu_gate;
    std::string gpu_device;
    // A batch's worker takes one of the gate's places for each student it grades (GpuGate::take_place).
    bool holds_gpu_place = false;
    // Set once a checker started CUDA in its sandbox with this context: later gradings skip that probe, which costs
    // a process and a CUDA context each time. A context is never shared between threads (a batch copies one per
    // worker), so a plain flag will do.
    mutable bool gpu_proven = false;
    // Failing cases rerun under compute-sanitizer and a slow speed test profiled, for a diagnosis of each.
    bool diagnose = true;
    // How long a profile waits for Nsight Compute, which profiles one process of the machine at a time: a batch's
    // workers would rather leave a profile out than stand idle; one submission checked alone waits its turn behind
    // another cugrade's.
    double profile_wait_seconds = 120.0;
    // The CPU self-check (`check --cpu`, or `check` without a GPU; docs/cpu-mode.md): correctness cases run on the
    // CPU, never a grade.
    bool cpu_self_check = false;
    // What submissions are compiled for without a GPU: the course's graded architecture (course.yaml's `arch`, or
    // its kit's), else fallback_arch.
    std::string arch_without_gpu = fallback_arch;
    // The least time a case has on the CPU, whatever the rubric gives it (the CPU is slower than a GPU).
    double cpu_case_seconds = 60.0;
    // Why the CPU self-check was chosen without being asked for, or why it could not be: for the progress lines.
    std::string cpu_self_check_choice;
    // Where every harness process is recorded; shared by a batch's workers. Null: nowhere.
    std::shared_ptr<RunTrace> trace;
    // A batch's race and memory checks kept across its submissions, one pool for each GPU (checker_pool.hpp). Null:
    // each submission's checks start their own.
    std::shared_ptr<CheckerPool> checker_pool;
    // A batch's counters of slow speed tests by the code they were read on, one table for each GPU
    // (same_code_profiles.hpp). Null: every slow speed test reads its own.
    std::shared_ptr<SameCodeProfiles> same_code_profiles;
    // A batch's rounds of profiles of slow speed tests, one for each GPU (counters_rounds.hpp). Null: each profiles
    // in its own turn.
    std::shared_ptr<CountersRounds> counters_rounds;
};

// When the correctness cases run on the CPU instead (docs/cpu-mode.md): a self-check, never a grade.
enum class CpuSelfCheck {
    without_gpu,  // where no NVIDIA GPU is usable and the machine can build for the CPU self-check
    always,       // --cpu
    never,        // --no-cpu: without a GPU the cases are reported skipped after the build
};

struct GradingSetup {
    std::optional<std::string> nvcc;
    std::filesystem::path cache_dir;
    std::uint64_t cache_max_bytes = 0;
    std::filesystem::path submissions;  // the folder of the submission graded; its parent holds the others
    // The least protection submissions may run under (--require-sandbox); a machine that offers less grades nothing.
    Containment required = Containment::none;
    std::function<void(const std::string&)> progress;
    bool diagnose = true;  // GradingContext::diagnose
    CpuSelfCheck cpu_self_check = CpuSelfCheck::never;
};

// Finds the toolchain (UsageError when there is none), probes the GPU, and removes what a killed cugrade left.
// Throws std::runtime_error, saying what is missing and how to get it, when this machine's sandbox is weaker than
// `setup.required`.
GradingContext make_grading_context(const Course& course, const GradingSetup& setup);

// Builds one submission file of one exercise into the cache, and nothing else, so that grading it later finds the
// build there: what a batch runs on every core at once. Without a cache it does nothing. Throws as grade_exercise.
void prebuild_submission(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                         const SubmissionFile& submission);

// Grades one submission file of one exercise with `rubric`. A failure of the submission is in the report; a failure of
// cugrade or the machine throws, and the caller records it as the exercise's error.
ExerciseReport grade_exercise(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                              const SubmissionFile& submission);

}  // namespace cugrade
