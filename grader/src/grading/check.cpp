#include "grading/check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "base/config.hpp"
#include "base/error.hpp"
#include "grading/grading.hpp"
#include "course/rubric.hpp"
#include "course/submission.hpp"
#include "base/parallel.hpp"
#include "base/text_safety.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

struct Assignment {
    Exercise exercise;
    Rubric rubric;
    SubmissionFile submission;
    std::optional<std::string> problem;  // the course's files for this exercise are broken: nothing can be graded
};

class Progress {
public:
    explicit Progress(std::ostream* out) : out_(out) {}
    template <class... Args>
    void say(fmt::format_string<Args...> format, Args&&... args) {
        if (out_ != nullptr) {
            *out_ << "cugrade: " << terminal_text(fmt::format(format, std::forward<Args>(args)...)) << std::endl;
        }
    }

private:
    std::ostream* out_;
};

// Which exercises to grade, each with its rubric and the student's file. Everything is validated before any build.
// When cugrade picks the exercises itself, one exercise whose description or rubric is broken is reported as such,
// and the others are graded.
std::vector<Assignment> plan_assignments(const Course& course, const CheckOptions& options, Progress& progress) {
    if (!fs::is_directory(options.submission_dir)) {
        throw UsageError(fmt::format("'{}' is not a folder; give the folder that holds your submission",
                                     options.submission_dir.string()));
    }
    std::vector<std::string> names;
    for (const auto& name : options.exercises) {
        if (std::find(names.begin(), names.end(), name) == names.end()) {
            names.push_back(name);  // the same exercise named twice is graded once
        }
    }
    const bool chosen = !names.empty();
    std::vector<Assignment> assignments;
    if (!chosen) {
        std::vector<std::string> expected;
        for (const auto& name : course.exercise_names()) {
            try {
                const Exercise exercise = load_exercise(course, name);
                expected.push_back(exercise.submission_file);
                if (submission_present(options.submission_dir, exercise.submission_file)) {
                    names.push_back(name);
                }
            } catch (const UsageError& e) {
                // Its file name is unknown; a file named after the exercise is taken for its submission.
                if (submission_present(options.submission_dir, name + ".cu")) {
                    Assignment broken;
                    broken.exercise.name = name;
                    broken.exercise.title = name;
                    broken.submission.shown = options.submission_dir / (name + ".cu");
                    broken.problem = fmt::format("the course's description of this exercise is broken: {}", e.what());
                    assignments.push_back(std::move(broken));
                } else {
                    progress.say("warning: exercise '{}' cannot be graded: {}", name, e.what());
                }
            }
        }
        if (names.empty() && assignments.empty()) {
            throw UsageError(fmt::format("no submission found in '{}': expected one of {}",
                                         options.submission_dir.string(), fmt::join(expected, ", ")));
        }
    }
    if (options.rubric && names.size() + assignments.size() != 1) {
        throw UsageError("--rubric needs exactly one exercise; name it with --exercise");
    }

    for (const auto& name : names) {
        Assignment a{load_exercise(course, name), {}, {}, std::nullopt};
        if (!submission_present(options.submission_dir, a.exercise.submission_file)) {
            throw UsageError(fmt::format("'{}' not found: the {} exercise is graded on that file",
                                         (options.submission_dir / a.exercise.submission_file).string(), name));
        }
        a.submission = read_submission(options.submission_dir, a.exercise.submission_file);
        try {
            a.rubric = load_exercise_rubric(a.exercise, options.rubric.value_or(course.rubric_for(name)));
            if (a.rubric.exercise != name) {
                throw UsageError(fmt::format("rubric '{}' is for exercise '{}', not '{}'", a.rubric.file.string(),
                                             a.rubric.exercise, name));
            }
        } catch (const UsageError& e) {
            if (chosen || options.rubric) {
                throw;
            }
            a.problem = fmt::format("the course's rubric for this exercise is broken: {}", e.what());
        }
        assignments.push_back(std::move(a));
    }
    return assignments;
}

}  // namespace

Report check(const Course& course, const CheckOptions& options) {
    Progress progress(options.progress);
    const std::vector<Assignment> assignments = plan_assignments(course, options, progress);
    if (!options.course_origin.empty()) {
        progress.say("course: {} ({})", course.root.string(), options.course_origin);
    }
    GradingSetup setup;
    setup.nvcc = options.nvcc;
    setup.cache_dir = options.cache_dir;
    setup.cache_max_bytes = options.cache_max_bytes;
    setup.submissions = options.submission_dir;
    setup.required = options.required_sandbox;
    setup.diagnose = options.diagnose;
    setup.cpu_self_check = options.cpu;
    std::mutex said;  // builds on several threads say what they do a whole line at a time
    setup.progress = [&](const std::string& line) {
        const std::lock_guard<std::mutex> lock(said);
        progress.say("{}", line);
    };
    GradingContext context = make_grading_context(course, setup);
    if (!context.cpu_self_check_choice.empty()) {
        progress.say("{}", context.cpu_self_check_choice);
    }

    // Several exercises: their builds first, on every core (a harness is most of a minute of nvcc), so that each
    // grading after finds its build in the cache. A build that fails here fails again in its grading, which reports it.
    std::vector<const Assignment*> to_build;
    for (const auto& a : assignments) {
        if (!a.problem) {
            to_build.push_back(&a);
        }
    }
    if (!context.cache_dir.empty() && to_build.size() > 1) {
        const unsigned jobs = std::min<unsigned>(usable_cores(), static_cast<unsigned>(to_build.size()));
        context.concurrent_jobs = jobs;
        in_parallel(to_build.size(), jobs, [&](std::size_t i) {
            try {
                prebuild_submission(context, to_build[i]->exercise, to_build[i]->rubric, to_build[i]->submission);
            } catch (const std::exception&) {
            }
        });
        context.concurrent_jobs = 1;
    }

    Report report;
    report.cugrade_version = CUGRADE_VERSION;
    report.gpu = context.gpu;
    report.visible_cases_only = course.kit.has_value();
    report.cpu_self_check = context.cpu_self_check;
    for (const auto& a : assignments) {
        try {
            if (a.problem) {
                throw std::runtime_error(*a.problem);
            }
            report.exercises.push_back(grade_exercise(context, a.exercise, a.rubric, a.submission));
        } catch (const std::exception& e) {
            // One exercise's failure must not lose the others' results.
            report.exercises.push_back(
                failed_exercise(a.exercise.name, a.exercise.title, a.submission.shown, a.rubric.file, e.what()));
        }
    }
    return report;
}

}  // namespace cugrade
