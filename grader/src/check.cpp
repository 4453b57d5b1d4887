#include "cugrade/check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

#include "config.hpp"
#include "cugrade/build.hpp"
#include "cugrade/error.hpp"
#include "cugrade/gpu.hpp"
#include "cugrade/inspect.hpp"
#include "cugrade/rubric.hpp"
#include "cugrade/run.hpp"
#include "cugrade/score.hpp"
#include "scratch_dir.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

struct Assignment {
    Exercise exercise;
    Rubric rubric;
    fs::path submission;
};

class Progress {
public:
    explicit Progress(std::ostream* out) : out_(out) {}
    template <class... Args>
    void say(fmt::format_string<Args...> format, Args&&... args) {
        if (out_ != nullptr) {
            *out_ << "cugrade: " << fmt::format(format, std::forward<Args>(args)...) << std::endl;
        }
    }

private:
    std::ostream* out_;
};

// Which exercises to grade, each with its rubric and the student's file. Everything is validated before any build.
std::vector<Assignment> plan_assignments(const Course& course, const CheckOptions& options) {
    if (!fs::is_directory(options.submission_dir)) {
        throw UsageError(fmt::format("'{}' is not a folder; give the folder that holds your submission",
                                     options.submission_dir.string()));
    }
    std::vector<std::string> names = options.exercises;
    if (names.empty()) {
        std::vector<std::string> expected;
        for (const auto& name : course.exercise_names()) {
            const Exercise exercise = load_exercise(course, name);
            expected.push_back(exercise.submission_file);
            if (fs::is_regular_file(options.submission_dir / exercise.submission_file)) {
                names.push_back(name);
            }
        }
        if (names.empty()) {
            throw UsageError(fmt::format("no submission found in '{}': expected one of {}",
                                         options.submission_dir.string(), fmt::join(expected, ", ")));
        }
    }
    if (options.rubric && names.size() != 1) {
        throw UsageError("--rubric needs exactly one exercise; name it with --exercise");
    }

    std::vector<Assignment> assignments;
    for (const auto& name : names) {
        Assignment a{load_exercise(course, name), {}, {}};
        a.submission = options.submission_dir / a.exercise.submission_file;
        if (!fs::is_regular_file(a.submission)) {
            throw UsageError(fmt::format("'{}' not found: the {} exercise is graded on that file",
                                         a.submission.string(), name));
        }
        a.rubric = load_rubric(options.rubric.value_or(course.rubric_for(name)));
        if (a.rubric.exercise != name) {
            throw UsageError(fmt::format("rubric '{}' is for exercise '{}', not '{}'", a.rubric.file.string(),
                                         a.rubric.exercise, name));
        }
        assignments.push_back(std::move(a));
    }
    return assignments;
}

// What no build or run of a submission may see: the course (reference, rubrics with hidden cases, the harness's
// sources), the build cache, the folder of submissions and the home folder. Folders the system needs are never
// hidden, whatever the layout.
std::vector<fs::path> hidden_paths(const Course& course, const CheckOptions& options, const fs::path& submission) {
    std::vector<fs::path> candidates = {course.root, options.cache_dir, fs::absolute(submission).parent_path().parent_path()};
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
        candidates.emplace_back(home);
    }
    std::error_code ec;
    candidates.push_back(fs::canonical("/proc/self/exe", ec).parent_path());  // cugrade's own files
    static const std::vector<fs::path> system = {"/", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/opt",
                                                 "/proc", "/sys", "/dev", "/run", "/tmp", "/var"};
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

// The limits of one harness process: its cases' clocks, a little output, no files to speak of, a few threads.
SandboxPolicy run_policy(const std::vector<fs::path>& hidden, const std::vector<CasePlan>& cases) {
    SandboxPolicy policy;
    policy.enabled = true;
    policy.hidden = hidden;
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

SandboxPolicy build_policy(const std::vector<fs::path>& hidden, double compile_seconds) {
    SandboxPolicy policy;
    policy.enabled = true;
    policy.hidden = hidden;
    policy.cpu_seconds = compile_seconds;
    policy.extra_processes = 256;
    policy.file_bytes = std::uint64_t{1} << 30;
    policy.output_kill_bytes = std::size_t{16} << 20;
    return policy;
}

ExerciseReport grade(const Course& course, const Assignment& a, const Toolchain& toolchain, const GpuInfo& gpu,
                     const CheckOptions& options, Progress& progress) {
    ExerciseReport report;
    report.exercise = a.exercise.name;
    report.title = a.exercise.title;
    report.submission = a.submission;
    report.rubric = a.rubric.file;
    const std::vector<CasePlan> cases = plan_cases(a.rubric);

    BuildOptions build_options;
    build_options.arch = gpu.available ? gpu.arch() : fallback_arch;
    build_options.cache_dir = options.cache_dir;
    build_options.compile_seconds = a.rubric.limits.compile_seconds;
    const std::vector<fs::path> hidden = hidden_paths(course, options, a.submission);
    build_options.sandbox = build_policy(hidden, build_options.compile_seconds);
    progress.say("building {} for {}", a.submission.string(), build_options.arch);
    report.build = build_submission(a.exercise, a.submission, toolchain, build_options);
    struct Cleanup {
        fs::path dir;
        ~Cleanup() {
            std::error_code ec;
            if (!dir.empty()) {
                fs::remove_all(dir, ec);
            }
        }
    } cleanup{report.build.work_dir};

    if (report.build.ok) {
        for (const auto& finding : inspect_submission(report.build, a.submission, a.exercise.entry_points,
                                                      a.rubric.forbidden, toolchain)
                                       .findings) {
            report.violations.push_back(finding.message);
        }
    }

    std::vector<CaseResult> results(cases.size());
    if (!report.build.ok) {
        for (auto& r : results) {
            r = {Status::build_failed, fmt::format("the submission did not {}; see the compiler's messages below",
                                                   report.build.step)};
        }
    } else if (!report.violations.empty()) {
        for (auto& r : results) {
            r = {Status::rejected, report.violations.front()};
        }
    } else if (!gpu.available) {
        report.skipped_reason = gpu.unavailable_reason;
        for (auto& r : results) {
            r = {Status::skipped, "needs an NVIDIA GPU"};
        }
    } else {
        progress.say("running {} cases on {}", cases.size(), gpu.name);
        ScratchDir scratch;
        RunOptions run_options;
        run_options.work_dir = scratch.path();
        run_options.compute_sanitizer = toolchain.compute_sanitizer;
        run_options.sandbox = run_policy(hidden, cases);
        run_options.sandbox.work_dir = scratch.path();
        // The program runs from its private folder: the cache it was built in is hidden.
        const fs::path program = scratch.path() / "program";
        fs::copy_file(report.build.program, program);
        report.protections = describe_protections(run_options.sandbox);
        if (const auto unusable = gpu_unusable(program, run_options)) {
            for (auto& r : results) {
                r = {Status::harness_error, *unusable};
            }
        } else {
            RunResult run = run_cases(program, cases, a.rubric, run_options);
            results = std::move(run.cases);
            report.program_output = std::move(run.output);
            report.program_output_truncated = run.output_truncated;
            report.protections.insert(report.protections.end(), run.protections.begin(), run.protections.end());
            if (run.forged_records > 0) {
                report.protections.push_back(fmt::format(
                    "result channel: {} records without the run's token ignored", run.forged_records));
            }
        }
    }
    for (std::size_t i = 0; i < cases.size(); ++i) {
        report.cases.push_back(score_case(cases[i], results[i], a.rubric));
    }
    return report;
}

}  // namespace

Report check(const Course& course, const CheckOptions& options) {
    const std::vector<Assignment> assignments = plan_assignments(course, options);
    const Toolchain toolchain = find_toolchain(options.nvcc);
    Progress progress(options.progress);

    Report report;
    report.cugrade_version = CUGRADE_VERSION;
    report.gpu = probe_gpu();
    for (const auto& a : assignments) {
        try {
            report.exercises.push_back(grade(course, a, toolchain, report.gpu, options, progress));
        } catch (const std::exception& e) {
            // One exercise's failure must not lose the others' results.
            ExerciseReport failed;
            failed.exercise = a.exercise.name;
            failed.title = a.exercise.title;
            failed.submission = a.submission;
            failed.rubric = a.rubric.file;
            failed.error = e.what();
            report.exercises.push_back(std::move(failed));
        }
    }
    return report;
}

}  // namespace cugrade
