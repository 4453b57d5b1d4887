#include "grading/grading.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <unistd.h>

#include "base/config.hpp"
#include "course/course_file.hpp"
#include "cpu/cpu_build.hpp"
#include "build/build.hpp"
#include "score/failure_patterns.hpp"
#include "inspect/inspect.hpp"
#include "course/kit.hpp"
#include "run/run.hpp"
#include "sandbox/sandbox.hpp"
#include "score/score.hpp"
#include "base/scratch_dir.hpp"
#include "diagnose/access_width.hpp"
#include "inspect/sass_listing.hpp"
#include "inspect/shared_memory_use.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// What no build or run of a submission may see, should it lie under something the sandbox shows (the sandbox shows
// only an allowlist of the host anyway): the course (reference, rubrics with hidden cases, the harness's sources),
// the build cache, the folder of submissions and the home folder. Folders the system needs are never hidden.
std::vector<fs::path> hidden_paths(const Course& course, const GradingSetup& setup) {
    std::error_code ec;
    // Resolved first: "." and links name the real folder, whose parent holds the other submissions.
    const fs::path submission_folder = fs::weakly_canonical(fs::absolute(setup.submissions), ec);
    std::vector<fs::path> candidates = {course.root, setup.cache_dir, submission_folder.parent_path()};
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
        candidates.emplace_back(home);
    }
    candidates.push_back(fs::canonical("/proc/self/exe", ec).parent_path());  // cugrade's own files
    static const std::vector<fs::path> system = {"/",    "/usr",  "/lib", "/lib64", "/bin", "/sbin", "/etc",
                                                 "/opt", "/proc", "/sys", "/dev",   "/run", "/tmp",  "/var"};
    std::vector<fs::path> hidden;
    for (const auto& path : candidates) {
        if (path.empty()) {
            continue;
        }
        const fs::path absolute = fs::weakly_canonical(fs::absolute(path), ec);
        if (std::find(system.begin(), system.end(), absolute) == system.end() &&
            std::find(hidden.begin(), hidden.end(), absolute) == hidden.end()) {
            hidden.push_back(absolute);
        }
    }
    return hidden;
}

// The limits of one harness process: its cases' clocks, a little output, no files to speak of, a few threads, the
// rubric's memory. It reads the toolkit (compute-sanitizer) and uses the GPU.
SandboxPolicy run_policy(const std::vector<fs::path>& hidden, const std::vector<CasePlan>& cases, const Rubric& rubric,
                         const Toolchain& toolchain) {
    SandboxPolicy policy;
    policy.enabled = true;
    policy.hidden = hidden;
    policy.gpu = true;
    policy.readable = {toolchain.toolkit_root};
    policy.memory_bytes = rubric.limits.memory_bytes;
    double seconds = 60.0;
    for (const auto& c : cases) {
        seconds += c.case_seconds;
    }
    policy.cpu_seconds = seconds;
    policy.extra_processes = 256;  // threads count as processes: CUDA and compute-sanitizer start several
    policy.file_bytes = std::uint64_t{64} << 20;
    policy.output_kill_bytes = std::size_t{16} << 20;
    return policy;
}

// nvcc and its tools, on any exercise a student can write: a file that includes an endless device, or a template
// that never stops instantiating, is stopped here.
constexpr std::uint64_t build_memory_bytes = std::uint64_t{8} << 30;

SandboxPolicy build_policy(const std::vector<fs::path>& hidden, double compile_seconds) {
    SandboxPolicy policy;
    policy.enabled = true;
    policy.hidden = hidden;
    policy.cpu_seconds = compile_seconds;
    policy.extra_processes = 256;
    policy.file_bytes = std::uint64_t{1} << 30;
    policy.memory_bytes = build_memory_bytes;
    policy.output_kill_bytes = std::size_t{16} << 20;
    return policy;
}

int others_processes(const GradingContext& context, const SandboxPolicy& policy) {
    return context.concurrent_jobs > 1 ? static_cast<int>(context.concurrent_jobs - 1) * policy.extra_processes : 0;
}

BuildOptions build_options_for(const GradingContext& context, const Rubric& rubric) {
    BuildOptions options;
    options.arch = context.gpu.available ? context.gpu.arch() : context.arch_without_gpu;
    options.cache_dir = context.cache_dir;
    options.cache_max_bytes = context.cache_max_bytes;
    options.compile_seconds = rubric.limits.compile_seconds;
    options.sandbox = build_policy(context.hidden, options.compile_seconds);
    options.sandbox.processes_of_others = others_processes(context, options.sandbox);
    options.progress = context.progress;
    return options;
}

void say(const GradingContext& context, const std::string& line) {
    if (context.progress) {
        context.progress(line);
    }
}

// Why the CPU self-check cannot run on this machine with this course, or nothing.
std::optional<std::string> why_no_cpu_self_check(const Course& course) {
    if (course.kit && course.kit->cpu_target.empty()) {
        return fmt::format("this kit was made without it: ask your course for a kit made by cugrade {} or later",
                           CUGRADE_VERSION);
    }
    if (course.kit) {
        const std::string here = cpu_target();
        if (here != course.kit->cpu_target) {
            return fmt::format("this kit's is built for {}, and this machine's C++ compiler builds for {}",
                               course.kit->cpu_target, here.empty() ? "nothing (no C++ compiler)" : here);
        }
    }
    return cpu_self_check_missing();
}

}  // namespace

GradingContext make_grading_context(const Course& course, const GradingSetup& setup) {
    if (setup.required != Containment::none) {
        // A GPU program's sandbox: what every run gets (a build's is the same but for the GPU).
        SandboxPolicy policy;
        policy.enabled = true;
        policy.gpu = true;
        const ContainmentCheck check = containment(policy);
        if (check.level < setup.required) {
            char host[256] = {};
            ::gethostname(host, sizeof host - 1);
            throw std::runtime_error(
                fmt::format("--require-sandbox {}: this machine ({}) contains submissions only as far as '{}': {}",
                            to_string(setup.required), host, to_string(check.level), fmt::join(check.missing, "; ")));
        }
    }
    GradingContext context;
    context.course = course;
    context.toolchain = find_toolchain(setup.nvcc);
    if (course.kit) {
        check_kit_toolkit(*course.kit, context.toolchain.release, context.toolchain.nvcc);
    }
    context.gpu = probe_gpu();
    const std::string course_arch = course.kit
                                        ? course.kit->graded_arch
                                        : load_course_file(course.root / "course.yaml", course.exercise_names()).arch;
    if (!course_arch.empty()) {
        context.arch_without_gpu = course_arch;
    }
    context.cache_dir = setup.cache_dir;
    context.cache_max_bytes = setup.cache_max_bytes;
    context.hidden = hidden_paths(course, setup);
    context.progress = setup.progress;
    context.diagnose = setup.diagnose;
    context.cpu_self_check = setup.cpu_self_check == CpuSelfCheck::always;
    if (context.cpu_self_check) {
        if (const std::optional<std::string> missing = why_no_cpu_self_check(course)) {
            throw UsageError("the CPU self-check cannot run here: " + *missing);
        }
    }
    if (setup.cpu_self_check == CpuSelfCheck::without_gpu && !context.gpu.available) {
        const std::optional<std::string> missing = why_no_cpu_self_check(course);
        context.cpu_self_check = !missing;
        context.cpu_self_check_choice =
            missing ? "no NVIDIA GPU here, and the CPU self-check cannot run: " + *missing
                    : "no NVIDIA GPU here: a CPU self-check instead, correctness only (--no-cpu: only the build)";
    }
    remove_stale_scratch_dirs();
    return context;
}

void prebuild_submission(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                         const SubmissionFile& submission) {
    if (!submission.refused && !context.cache_dir.empty()) {
        build_submission(exercise, submission, context.toolchain, build_options_for(context, rubric));
    }
}

// Where a run's time went, and what its program printed, in the report; the build's time stays.
void take_run_output(RunResult& run, ExerciseReport& report) {
    const double build_seconds = report.seconds.build;
    report.seconds = run.seconds;
    report.seconds.build = build_seconds;
    report.program_output = std::move(run.output.text);
    report.program_output_truncated = run.output.truncated;
    report.hidden_program_output = std::move(run.hidden_output.text);
    report.hidden_program_output_truncated = run.hidden_output.truncated;
}

// What the self-check runs: correctness cases of at most this many elements (sum's 2^22 takes about a second a
// call on one core), each under these orders of the threads (with at least GradingContext::cpu_case_seconds for
// each case).
constexpr std::uint64_t cpu_case_budget = std::uint64_t{1} << 22;
const std::vector<std::string> cpu_schedules = {"forward", "reverse", "shuffled:1"};

// The cases the CPU self-check runs, each with where it stands in `cases`; the others skipped in `results`.
std::pair<std::vector<CasePlan>, std::vector<std::size_t>> cases_for_cpu(const GradingContext& context,
                                                                         const std::vector<CasePlan>& cases,
                                                                         std::vector<CaseResult>& results) {
    std::vector<CasePlan> on_cpu;
    std::vector<std::size_t> index_of;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        if (cases[i].timed) {
            results[i] = {Status::skipped, "a speed test needs an NVIDIA GPU: the CPU self-check times nothing"};
        } else if (cases[i].size() > cpu_case_budget) {
            results[i] = {Status::skipped, fmt::format("{} elements, above the CPU self-check's {}: it needs an NVIDIA "
                                                       "GPU",
                                                       cases[i].size(), cpu_case_budget)};
        } else {
            CasePlan plan = cases[i];
            plan.case_seconds = std::max(plan.case_seconds, context.cpu_case_seconds);
            on_cpu.push_back(std::move(plan));
            index_of.push_back(i);
        }
    }
    return {std::move(on_cpu), std::move(index_of)};
}

// The CPU self-check's run: the harness and the submission built for the CPU, the correctness cases within its budget
// run under three orders of the threads; the rest skipped with the reason.
void check_on_cpu(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                  const SubmissionFile& submission, const std::vector<CasePlan>& cases,
                  std::vector<CaseResult>& results, ExerciseReport& report) {
    ScratchDir scratch;
    // The GPU build's limits and sandbox.
    const BuildOptions gpu_build = build_options_for(context, rubric);
    CpuBuildOptions build_options;
    build_options.work_dir = scratch.path();
    build_options.cache_dir = gpu_build.cache_dir;
    build_options.sandbox = gpu_build.sandbox;
    build_options.compile_seconds = gpu_build.compile_seconds;
    build_options.toolchain = context.toolchain;
    say(context, fmt::format("building {} for the CPU self-check", submission.shown.string()));
    const auto build_started = std::chrono::steady_clock::now();
    const CpuBuildResult build = build_for_cpu(exercise, submission, build_options);
    report.seconds.build += std::chrono::duration<double>(std::chrono::steady_clock::now() - build_started).count();
    if (!build.ok) {
        report.build.ok = false;
        report.build.step = build.step + " for the CPU";
        report.build.diagnostics = build.diagnostics;
        for (auto& r : results) {
            r = {Status::build_failed, fmt::format("the submission did not {} for the CPU self-check; see the "
                                                   "compiler's messages below",
                                                   build.step)};
        }
        return;
    }
    const auto [on_cpu, index_of] = cases_for_cpu(context, cases, results);
    say(context, fmt::format("running {} of {} cases on the CPU (CPU self-check)", on_cpu.size(), cases.size()));
    RunOptions run_options;
    run_options.work_dir = scratch.path();
    run_options.sandbox = run_policy(context.hidden, on_cpu, rubric, context.toolchain);
    run_options.sandbox.processes_of_others = others_processes(context, run_options.sandbox);
    run_options.sandbox.work_dir = scratch.path();
    run_options.sandbox.gpu = false;
    run_options.trace = context.trace.get();
    run_options.trace_label = submission.shown.string();
    run_options.student_files = {submission.name};
    // Both in this grading's own folder, not in the cache: nothing to copy out of sight of other gradings. The
    // submission runs in the runner, a process of its own beside the checker, as on the GPU.
    run_options.runner = build.runner;
    RunResult run = run_cases_on_cpu(build.checker, on_cpu, run_options, cpu_schedules);
    for (std::size_t k = 0; k < on_cpu.size(); ++k) {
        results[index_of[k]] = std::move(run.cases[k]);
    }
    take_run_output(run, report);
    report.protections = describe_protections(run_options.sandbox);
    report.protections.insert(report.protections.end(), run.protections.begin(), run.protections.end());
    report.protections.push_back("CPU self-check: the submission runs in a process of its own, on the CPU, apart "
                                 "from the checks and the reference");
    report.diagnosis_notes.push_back("CPU self-check: no compute-sanitizer on the CPU: a read or write just outside an "
                                     "array stops its kernel, but one that lands in another array and a read of "
                                     "memory nothing wrote go unseen; races show only where the order threads run in "
                                     "changes the result");
}

namespace {

// One result for every case: where none ran (rejected, not built, skipped).
std::vector<CaseResult> every_case(const std::vector<CasePlan>& cases, const CaseResult& result) {
    return std::vector<CaseResult>(cases.size(), result);
}

// A submission refused before building (a link out of its folder): rejected, not built.
std::vector<CaseResult> refuse(const SubmissionFile& submission, const std::vector<CasePlan>& cases,
                               ExerciseReport& report) {
    report.build.attempted = false;
    report.violations.push_back(*submission.refused);
    return every_case(cases, {Status::rejected, *submission.refused});
}

struct BuildStep {
    BuildResult build;
    std::chrono::steady_clock::time_point started;  // the build's time runs on to the end of the inspection
};

BuildStep build(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                const SubmissionFile& submission) {
    const BuildOptions build_options = build_options_for(context, rubric);
    say(context, fmt::format("building {} for {}", submission.shown.string(), build_options.arch));
    const auto started = std::chrono::steady_clock::now();
    return {build_submission(exercise, submission, context.toolchain, build_options), started};
}

BuildOutcome build_outcome(const BuildResult& build) {
    BuildOutcome outcome;
    outcome.ok = build.ok;
    outcome.cached = build.cached;
    outcome.step = build.step;
    outcome.diagnostics = build.diagnostics;
    return outcome;
}

// The rules the submission's object broke; a failed link's object is inspected for its libraries alone.
std::vector<std::string> inspect(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                                 const SubmissionFile& submission, const BuildResult& build) {
    std::vector<std::string> violations;
    if (build.ok) {
        for (const auto& finding :
             inspect_submission(build, submission, exercise, rubric.apis, context.toolchain).findings) {
            violations.push_back(finding.message);
        }
    } else if (build.step == "link" && !build.object.empty() && std::filesystem::exists(build.object)) {
        for (const auto& finding :
             inspect_libraries(build, submission, exercise, rubric.apis, context.toolchain).findings) {
            violations.push_back(finding.message);
        }
    }
    return violations;
}

// How the harness runs this submission on the GPU, from `scratch`.
RunOptions gpu_run_options(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                           const SubmissionFile& submission, const BuildResult& build,
                           const std::vector<CasePlan>& cases, const fs::path& scratch) {
    const Toolchain& toolchain = context.toolchain;
    RunOptions run_options;
    run_options.work_dir = scratch;
    run_options.compute_sanitizer = toolchain.compute_sanitizer;
    run_options.nsight_compute = toolchain.nsight_compute;
    run_options.nsight_compute_files = toolchain.nsight_compute_files;
    run_options.cupti_library = toolchain.cupti_library;
    run_options.diagnose = context.diagnose;
    run_options.profile_wait_seconds = context.profile_wait_seconds;
    run_options.student_files = {submission.name};
    run_options.sandbox = run_policy(context.hidden, cases, rubric, toolchain);
    run_options.sandbox.processes_of_others = others_processes(context, run_options.sandbox);
    run_options.sandbox.work_dir = scratch;
    run_options.gpu_gate = context.gpu_gate.get();
    run_options.holds_gpu_place = context.holds_gpu_place;
    run_options.trace = context.trace.get();
    run_options.trace_label = submission.shown.string();
    run_options.checker_pool = context.checker_pool.get();
    run_options.counters_rounds = context.counters_rounds.get();
    run_options.shared_program = build.program;
    if (!build.same_code.empty()) {
        run_options.same_code_profiles = context.same_code_profiles.get();
        run_options.same_code = exercise.name + "\n" + rubric.file.string() + "\n" + build.same_code;
    }
    if (!context.gpu_device.empty()) {
        run_options.environment.emplace_back("CUDA_VISIBLE_DEVICES", context.gpu_device);
    }
    return run_options;
}

// Copies what runs out of the cache into `scratch`, and returns the program.
fs::path copy_to_scratch(const BuildResult& build, const fs::path& scratch, RunOptions& run_options) {
    // The program runs from its private folder: the cache it was built in is hidden.
    const fs::path program = scratch / "program";
    fs::copy_file(build.program, program);
    // The submission's host code, and its device code for the checker (capture/replay.hpp).
    run_options.runner = scratch / "runner";
    fs::copy_file(build.runner, run_options.runner);
    run_options.device_code = scratch / "device-code.fatbin";
    fs::copy_file(build.device_code, run_options.device_code);
    return program;
}

// The submission's machine code, listed once: what the race check and a slow speed test's profile read of it.
void read_machine_code(const Toolchain& toolchain, RunOptions& run_options) {
    const auto listing = sass_listing_of(toolchain.cuobjdump, run_options.device_code);
    run_options.may_touch_shared_memory = may_touch_shared_memory(listing);
    if (listing) {
        run_options.access_widths = read_access_widths(*listing);
    }
}

// Only scoring tells a slow speed test from a fast one: the harness reports both as passed. A speed test with a
// wrong answer that nothing explained is profiled too: its design may then be the cause (an atomic per element that
// stalls a float32 total), and its speed is what it will be graded on once right. Neither is where a smaller case
// failed (profile_case): that is the bug to fix first. Nor is any where a case was rejected: the submission keeps
// nothing (keep_nothing_after_rejection).
RunResult diagnose(const fs::path& program, const std::vector<CasePlan>& cases, const Rubric& rubric,
                   const RunOptions& run_options, RunResult run) {
    const bool rejected = std::any_of(run.cases.begin(), run.cases.end(),
                                      [](const CaseResult& r) { return r.status == Status::rejected; });
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const Status status = cases[i].timed ? score_case(cases[i], run.cases[i], rubric).status : Status::passed;
        const bool unexplained_wrong = status == Status::wrong_answer && !names_cause(run.cases[i].diagnosis);
        if (!rejected && (status == Status::slow || unexplained_wrong)) {
            profile_case(program, cases, i, run_options, run);
        }
        // The counters became the diagnosis, or are not needed: they are not part of the results.
        if (run.cases[i].measurements.is_object()) {
            run.cases[i].measurements.erase("kernel_profile");
        }
    }
    return run;
}

// The GPU run's output, protections and notes, in the report; its cases' results returned.
std::vector<CaseResult> take_gpu_run(RunResult run, ExerciseReport& report) {
    take_run_output(run, report);
    report.protections.insert(report.protections.end(), run.protections.begin(), run.protections.end());
    report.diagnosis_notes = std::move(run.diagnosis_notes);
    if (run.forged_records > 0) {
        report.protections.push_back(
            fmt::format("result channel: {} records without the run's token ignored", run.forged_records));
    }
    return std::move(run.cases);
}

std::vector<CaseResult> run_on_gpu(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                                   const SubmissionFile& submission, const BuildResult& build,
                                   const std::vector<CasePlan>& cases, ExerciseReport& report) {
    say(context, fmt::format("running {} cases on {}", cases.size(), context.gpu.name));
    ScratchDir scratch;
    RunOptions run_options = gpu_run_options(context, exercise, rubric, submission, build, cases, scratch.path());
    const fs::path program = copy_to_scratch(build, scratch.path(), run_options);
    read_machine_code(context.toolchain, run_options);
    report.protections = describe_protections(run_options.sandbox);
    if (const auto unusable = context.gpu_proven ? std::nullopt : gpu_unusable(program, run_options)) {
        return every_case(cases, {Status::harness_error, *unusable});
    }
    context.gpu_proven = true;
    RunResult run = run_cases(program, cases, run_options);
    return take_gpu_run(diagnose(program, cases, rubric, run_options, std::move(run)), report);
}

// The cases' results of a built submission: run where it built and broke no rule, on the GPU or the CPU.
std::vector<CaseResult> run(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                            const SubmissionFile& submission, const BuildResult& build,
                            const std::vector<CasePlan>& cases, ExerciseReport& report) {
    if (!build.ok && report.violations.empty()) {
        return every_case(cases, {Status::build_failed, fmt::format("the submission did not {}; see the compiler's "
                                                                    "messages below",
                                                                    build.step)});
    }
    if (!report.violations.empty()) {
        return every_case(cases, {Status::rejected, report.violations.front()});
    }
    if (context.cpu_self_check) {
        std::vector<CaseResult> results(cases.size());
        check_on_cpu(context, exercise, rubric, submission, cases, results, report);
        return results;
    }
    if (!context.gpu.available) {
        report.skipped_reason = context.gpu.unavailable_reason;
        return every_case(cases, {Status::skipped, "needs an NVIDIA GPU"});
    }
    return run_on_gpu(context, exercise, rubric, submission, build, cases, report);
}

// The build, the inspection of what it made, and the run of the cases where both allow it.
std::vector<CaseResult> build_and_run(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                                      const SubmissionFile& submission, const std::vector<CasePlan>& cases,
                                      ExerciseReport& report) {
    const BuildStep built = build(context, exercise, rubric, submission);
    report.build = build_outcome(built.build);
    report.violations = inspect(context, exercise, rubric, submission, built.build);
    report.seconds.build = std::chrono::duration<double>(std::chrono::steady_clock::now() - built.started).count();
    return run(context, exercise, rubric, submission, built.build, cases, report);
}

ExerciseReport new_report(const Exercise& exercise, const Rubric& rubric, const SubmissionFile& submission) {
    ExerciseReport report;
    report.exercise = exercise.name;
    report.title = exercise.title;
    report.submission = submission.shown;
    report.rubric = rubric.file;
    return report;
}

// Each hint ends where the student README teaches the fix.
void point_to_readme(const Exercise& exercise, Diagnosis& diagnosis) {
    if (const std::string where = readme_pointer(exercise, diagnosis.topic); !where.empty()) {
        diagnosis.hint += (diagnosis.hint.empty() ? "" : "; ") + where;
    }
}

ExerciseReport score(const Exercise& exercise, const Rubric& rubric, const std::vector<CasePlan>& cases,
                     const std::vector<CaseResult>& results, ExerciseReport report) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
        report.cases.push_back(score_case(cases[i], results[i], rubric));
    }
    keep_nothing_after_rejection(report.cases);
    report.patterns = failure_patterns(report.cases);
    for (auto& pattern : report.patterns) {
        point_to_readme(exercise, pattern);
    }
    for (auto& c : report.cases) {
        if (c.diagnosis) {
            point_to_readme(exercise, *c.diagnosis);
        }
    }
    return report;
}

}  // namespace

ExerciseReport grade_exercise(const GradingContext& context, const Exercise& exercise, const Rubric& rubric,
                              const SubmissionFile& submission) {
    ExerciseReport report = new_report(exercise, rubric, submission);
    std::vector<CasePlan> cases = plan_cases(rubric);
    hide_seeds(cases, draw_grading_secret());  // drawn anew for every grading, and kept nowhere
    const std::vector<CaseResult> results = submission.refused
                                                ? refuse(submission, cases, report)
                                                : build_and_run(context, exercise, rubric, submission, cases, report);
    return score(exercise, rubric, cases, results, std::move(report));
}

}  // namespace cugrade
