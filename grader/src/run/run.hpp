// Running a built program on the rubric's cases: the harness in a child process, restarted after a crash, a CUDA
// error or a hang, so one bad case never hides the verdicts of the others.
#pragma once

#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/results.hpp"
#include "schedule/gpu_gate.hpp"
#include "course/rubric.hpp"
#include "run/run_trace.hpp"
#include "diagnose/sanitizer_report.hpp"
#include "sandbox/sandbox.hpp"
#include "diagnose/speed_profile.hpp"
#include "base/stage_seconds.hpp"
#include "base/status.hpp"

namespace cugrade {

class CheckerPool;       // checker_pool.hpp
class SameCodeProfiles;  // same_code_profiles.hpp
class CountersRounds;    // counters_rounds.hpp

struct RunOptions {
    std::filesystem::path work_dir;  // a private folder for the plan files; the program runs there
    double startup_seconds = 60.0;   // from start to "ready", and between cases
    // The same under compute-sanitizer, which instruments every module as CUDA starts: about 1.5 s alone on an
    // H100, longer beside a batch's other harnesses.
    double sanitizer_startup_seconds = 30.0;
    std::size_t output_limit = 64 * 1024;        // of each stream (visible, hidden) and of each process
    std::string compute_sanitizer;               // runs the race-check cases; empty: they cannot run
    std::string nsight_compute;                  // profiles a speed test below its top tier (ncu); empty: none is
    std::filesystem::path nsight_compute_files;  // what ncu reads of its own, shown to the profiled run
    // The width of each kernel's global accesses, read from its code, where the checker's counters leave how much of
    // each sector was used to be told from it (access_width.hpp); empty: not known.
    KernelAccessWidths access_widths;
    // CUPTI, with which the harness reads the counters of a speed test below its top tier itself (before Nsight
    // Compute is asked); empty: it does not.
    std::filesystem::path cupti_library;
    SandboxPolicy sandbox;  // for every harness process; its work_dir is work_dir
    // The submission's runner, started beside each harness process with no GPU, and its device code, which the
    // harness loads; empty: the harness runs without a runner.
    std::filesystem::path runner;
    std::filesystem::path device_code;
    // Whether the submission's kernels may touch shared memory (shared_memory_use.hpp). False: racecheck, which looks
    // for races there alone, could report nothing, and the race cases are graded as the others are, without it.
    bool may_touch_shared_memory = true;
    // A GPU shared with other gradings (a batch): correctness cases run beside theirs, speed tests alone. Null: the
    // GPU is this grading's only. A case that keeps a speed test waiting, its GPU work held past the gate's
    // patience, is stopped and run again from its start once the GPU is quiet (gpu_gate.hpp), with its whole limit;
    // `holds_gpu_place`: this grading holds one of the gate's places, given up while it waits.
    GpuGate* gpu_gate = nullptr;
    bool holds_gpu_place = false;
    // The smallest failing case runs again under compute-sanitizer to find its cause (run_cases), and a slow
    // speed test under the profiler (profile_case): the sanitizer's reruns at most diagnosis_seconds together, the
    // profile at most as long, waiting for the performance counters aside. The errors they report are looked for
    // first in `student_files` (file names: "sum.cu"). False: no reruns.
    bool diagnose = true;
    double diagnosis_seconds = 20.0;
    // Nsight Compute profiles one process of a machine at a time: a profile waits this long for its turn, then is
    // left out with a note (GradingContext::profile_wait_seconds).
    double profile_wait_seconds = 120.0;
    std::vector<std::string> student_files;
    // A batch's checkers kept across submissions (checker_pool.hpp): the race and memory checks' cases of a
    // visibility run first in one of them, where `shared_program` (the exercise's checker as built, the same for every
    // submission) is set. Null: every check starts its own.
    CheckerPool* checker_pool = nullptr;
    std::filesystem::path shared_program;
    // A batch's counters of slow speed tests, kept by the code they were read on (same_code_profiles.hpp), and this
    // submission's code: its source without comments, with its exercise and rubric. A speed test whose counters were
    // read on the same code already is diagnosed from them, with its own timings, and reads none itself. Null (as
    // where the code is not known): every slow speed test reads its own.
    SameCodeProfiles* same_code_profiles = nullptr;
    std::string same_code;
    // A batch's rounds of profiles (counters_rounds.hpp): a slow speed test is declined its counters in its own turn,
    // and profiled with others' in a round, its grading waiting without its place. Null: it profiles in its turn.
    CountersRounds* counters_rounds = nullptr;
    // Where each harness process is recorded (run_trace.hpp), under `trace_label` (the submission's file); null:
    // nowhere.
    RunTrace* trace = nullptr;
    std::string trace_label;
    // Set for every harness process on top of the sandbox's: CUDA_VISIBLE_DEVICES, for a batch on several GPUs.
    std::vector<std::pair<std::string, std::string>> environment;
};

RunResult run_cases(const std::filesystem::path& program, const std::vector<CasePlan>& cases,
                    const RunOptions& options);

// Whether a smaller case (one without a clock) has failed by the submission's fault (a harness error or a skipped
// case is none), of those whose `decided[j]` is true: the one rule for
// whether a speed test is profiled (docs/diagnoses.md). A kernel that fails a smaller case is about to change, and its
// profile holds the GPU alone from every other submission, so it is profiled once the smaller cases pass. The run
// loop declines a checker's request for the counters by it (the verdicts so far), profile_case by all of them.
bool smaller_case_failed(const std::vector<CasePlan>& cases, const std::vector<CaseResult>& results,
                         const std::vector<bool>& decided);

// What slows case `index`, a speed test below its top tier or wrong with nothing to explain it, down: from the
// counters its harness read itself right after timing it (measurements' "kernel_profile"), else from a run of its
// calls, alone and untimed, under Nsight Compute; nothing where a smaller case failed. Its diagnosis goes into
// result.cases[index], or why there is none into result.diagnosis_notes. Its verdict and measurements stay those of
// the timed run.
void profile_case(const std::filesystem::path& program, const std::vector<CasePlan>& cases, std::size_t index,
                  const RunOptions& options, RunResult& result);

// The plan the harness reads (exercises/common/protocol.hpp), for the given cases. `skip_exit_handlers`: end the
// harness with _exit after its last case (not under compute-sanitizer, which reports at a normal exit).
nlohmann::json make_plan(const std::vector<const CasePlan*>& cases, bool skip_exit_handlers = true,
                         const std::filesystem::path& device_code = {});

// Why the GPU cannot run `program` now (it starts the harness with no cases), or nothing when it can.
// The CPU self-check (docs/cpu-mode.md): `program` is the CPU build of the checker (harness and reference), and
// `options.runner` that of the submission's runner, started beside it for every checker process. Every case runs
// under the first of `schedules` (block_runner.hpp's orders in which waiting threads resume); those that ran to a
// result run again under the others, and a case whose status differs between them is a race: its result depends on
// the order threads run in. Once cases of two sizes in a row time out, the cases left are not run (skipped, with
// why). No tool reruns: there is no compute-sanitizer on the CPU.
RunResult run_cases_on_cpu(const std::filesystem::path& program, const std::vector<CasePlan>& cases,
                           const RunOptions& options, const std::vector<std::string>& schedules);

std::optional<std::string> gpu_unusable(const std::filesystem::path& program, const RunOptions& options);

}  // namespace cugrade
