#include "grading/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "course/api_policy.hpp"
#include "base/error.hpp"
#include "grading/grading.hpp"
#include "base/file_io.hpp"
#include "base/parallel.hpp"
#include "course/parameter_rules.hpp"
#include "speed_metric.hpp"
#include "base/text_safety.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// The reference, graded as a submission of its own exercise.
SubmissionFile reference_as_submission(const Exercise& exercise) {
    SubmissionFile file;
    file.shown = exercise.reference_source;
    file.name = exercise.submission_file;
    file.bytes = read_file(exercise.reference_source);
    return file;
}

// A checker the reference is timed in: the exercise's own (the reference against itself), or one with a baseline
// built in the reference's place.
struct Checker {
    std::string what;   // the row it gives: "reference", or the baseline's name
    Exercise exercise;  // as built into the checker
    std::string error;  // why it times nothing: its baseline is missing, or it did not build
};

// One exercise as bench times it.
struct BenchPlan {
    Exercise exercise;
    Rubric rubric;  // the speed test alone
    std::vector<Shape> shapes;
    std::string setting;  // the parameters bench was given that this exercise has: "k=1024"
    Checker own;
    std::vector<Checker> baselines;
};

// A baseline takes the reference's place in the checker, and the reference is timed against it as a submission: the
// run's reference time is the baseline's, and its ratio the reference's over it.
Checker baseline_checker(const Exercise& exercise, const Baseline& baseline) {
    Checker checker{baseline.name, exercise, ""};
    checker.exercise.reference_source = baseline.source;
    checker.exercise.checker_libraries = baseline.link;
    if (!fs::is_regular_file(baseline.source)) {
        checker.error = fmt::format("'{}' is missing", baseline.source.string());
    }
    return checker;
}

// `--parameter NAME=VALUE` for the exercise that has NAME: its value checked as a rubric's would be.
void set_speed_parameters(BenchPlan& plan, const BenchOptions& options) {
    const auto& rules = plan.exercise.choices.parameters;
    for (const auto& [parameter, number] : options.parameters) {
        if (rules.count(parameter) == 0) {
            continue;
        }
        const ParameterValue value = command_line_value(rules.at(parameter), number);
        if (const std::string problem = parameter_problem(parameter, rules.at(parameter), value); !problem.empty()) {
            throw UsageError(fmt::format("--parameter {}={}: {}", parameter, value.written, problem));
        }
        plan.rubric.speed->parameters[parameter] = value;
        plan.setting += fmt::format("{}{}={}", plan.setting.empty() ? "" : " ", parameter, value.written);
    }
    for (const auto& [parameter, rule] : rules) {
        if (const std::string problem = relation_problem(parameter, rules, plan.rubric.speed->parameters);
            !problem.empty()) {
            throw UsageError(fmt::format("--parameter: {}", problem));
        }
    }
}

// Throws UsageError when a size or shape asked for does not fit one of the exercises.
std::vector<BenchPlan> plan_bench(const Course& course, const BenchOptions& options) {
    std::vector<BenchPlan> plans;
    const std::vector<std::string> names = options.exercises.empty() ? course.exercise_names() : options.exercises;
    for (const auto& name : names) {
        BenchPlan plan;
        plan.exercise = load_exercise(course, name);
        plan.rubric = load_exercise_rubric(plan.exercise, course.rubric_for(name));
        if (!plan.rubric.speed) {
            continue;
        }
        plan.rubric.groups.clear();  // the speed test alone
        // The reference and the baseline are the course's own code: a library's solution, and whatever it calls.
        plan.rubric.apis.allowed_libraries = known_libraries();
        plan.rubric.apis.allowed_functions = {"*"};
        plan.shapes = plan.rubric.dimensions == 1 ? options.sizes : options.shapes;
        if (plan.shapes.empty()) {
            plan.shapes = {plan.rubric.speed->shape};
        }
        for (const Shape& shape : plan.shapes) {
            if (shape.size() != plan.rubric.dimensions) {
                throw UsageError(fmt::format("{} takes {}, not {}", name,
                                             plan.rubric.dimensions == 1 ? "--size" : "--shape", format_shape(shape)));
            }
        }
        set_speed_parameters(plan, options);
        plan.own = {"reference", plan.exercise, ""};
        for (const Baseline& baseline : plan.exercise.baselines) {
            plan.baselines.push_back(baseline_checker(plan.exercise, baseline));
        }
        plans.push_back(std::move(plan));
    }
    for (const auto& [parameter, value] : options.parameters) {
        if (std::none_of(plans.begin(), plans.end(), [&](const BenchPlan& plan) {
                return plan.exercise.choices.parameters.count(parameter) != 0;
            })) {
            throw UsageError(fmt::format("--parameter {}: no exercise timed here has that parameter", parameter));
        }
    }
    return plans;
}

// Builds every checker with the reference as its submission into the cache, all at once: each is most of a minute of
// nvcc on one core (the harness with CUB), so one after another they took most of bench's time. A checker that fails
// to build keeps the reason for its rows rather than being built again, alone, in the timing.
void build_checkers(GradingContext& context, std::vector<BenchPlan>& plans, BenchReport& report,
                    std::ostream* progress) {
    std::vector<std::pair<const BenchPlan*, Checker*>> builds;
    for (auto& plan : plans) {
        builds.emplace_back(&plan, &plan.own);
        for (auto& checker : plan.baselines) {
            if (checker.error.empty()) {
                builds.emplace_back(&plan, &checker);
            }
        }
    }
    if (context.cache_dir.empty() || builds.empty()) {
        return;  // without a cache nothing can be built ahead: each speed test builds its own
    }
    report.checkers = static_cast<unsigned>(builds.size());
    report.build_jobs = std::min<unsigned>(usable_cores(), report.checkers);
    if (progress != nullptr) {
        *progress << fmt::format("cugrade: building {} checker{}, {} at a time", report.checkers,
                                 report.checkers == 1 ? "" : "s", report.build_jobs)
                  << std::endl;
    }
    const auto started = std::chrono::steady_clock::now();
    context.concurrent_jobs = report.build_jobs;
    in_parallel(builds.size(), report.build_jobs, [&](std::size_t i) {
        const auto& [plan, checker] = builds[i];
        try {
            prebuild_submission(context, checker->exercise, plan->rubric, reference_as_submission(plan->exercise));
        } catch (const std::exception& e) {
            checker->error = e.what();
        }
    });
    context.concurrent_jobs = 1;
    report.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// Grades the reference as a submission in `checker` with a rubric that holds only the speed test (whose shape the
// caller has set), and returns the speed case's measurements, or an error.
nlohmann::json time_reference(const GradingContext& context, const BenchPlan& plan, const Checker& checker,
                              const Rubric& rubric, std::string& error) {
    try {
        const ExerciseReport report =
            grade_exercise(context, checker.exercise, rubric, reference_as_submission(plan.exercise));
        if (!report.build.ok) {
            error = fmt::format("'{}' did not build:\n{}", plan.exercise.reference_source.string(),
                                report.build.diagnostics);
            return {};
        }
        const ScoredCase& speed = report.cases.back();
        if (speed.status != Status::passed && speed.status != Status::slow) {
            error = fmt::format("{}: {}", to_string(speed.status), speed.detail);
            return {};
        }
        return speed.measurements;
    } catch (const std::exception& e) {
        error = e.what();
        return {};
    }
}

BenchRow empty_row(const std::string& exercise, const Shape& shape, const std::string& what,
                   const std::string& error = "") {
    BenchRow row;
    row.exercise = exercise;
    row.shape = shape;
    row.what = what;
    row.error = error;
    return row;
}

// A row from a speed test's measurements, of its submission's side or of its reference's.
BenchRow row_from(const std::string& exercise, const Shape& shape, const std::string& what, const nlohmann::json& m,
                  const std::string& side = "submission") {
    BenchRow row = empty_row(exercise, shape, what);
    row.ms = m.value(side + "_ms", 0.0);
    const speed::Figures figures = speed::figures(row.ms, row.ms, m.value("bytes", 0.0), m.value("copy_gbps", 0.0));
    row.gb_per_s = figures.gb_per_s;
    row.copy_fraction = figures.copy_fraction;
    row.rse = m.value(side + "_rse", 0.0);
    row.samples = m.value("samples", 0);
    return row;
}

}  // namespace

BenchReport bench(const Course& course, const BenchOptions& options) {
    // The sizes, shapes and parameters asked for are checked first, with or without a GPU.
    std::vector<BenchPlan> plans = plan_bench(course, options);
    BenchReport report;
    GradingSetup setup;
    setup.nvcc = options.nvcc;
    setup.cache_dir = options.cache_dir;
    setup.cache_max_bytes = options.cache_max_bytes;
    setup.submissions = course.root / "reference";
    // The reference timed against itself or a baseline may come out "slow" by the rubric's tiers: a diagnosis would
    // then profile it under Nsight Compute, minutes that tell bench nothing.
    setup.diagnose = false;
    GradingContext context = make_grading_context(course, setup);
    report.gpu = context.gpu;
    if (!report.gpu.available) {
        return report;
    }
    const auto show = [&](const std::string& text) {
        if (options.table != nullptr) {
            *options.table << text << std::flush;
        }
    };
    show(bench_title(report.gpu));
    build_checkers(context, plans, report, options.progress);
    show(bench_header(report));

    // One speed test at a time: each has the GPU to itself while it samples.
    const auto started = std::chrono::steady_clock::now();
    const auto time_in = [&](const BenchPlan& plan, const Checker& checker, const Rubric& rubric, std::string& error) {
        error = checker.error;
        if (!error.empty()) {
            return nlohmann::json();
        }
        ++report.speed_tests;
        return time_reference(context, plan, checker, rubric, error);
    };
    for (const BenchPlan& plan : plans) {
        const std::string& name = plan.exercise.name;
        const auto add = [&](BenchRow row) {
            row.setting = plan.setting;
            report.rows.push_back(row);
            show(bench_row(row));
        };
        for (const Shape& shape : plan.shapes) {
            Rubric rubric = plan.rubric;
            rubric.speed->shape = shape;
            std::string error;
            const auto reference = time_in(plan, plan.own, rubric, error);
            if (!error.empty()) {
                add(empty_row(name, shape, "reference", error));
                continue;
            }
            add(row_from(name, shape, "reference", reference));
            BenchRow copy = empty_row(name, shape, "copy");
            copy.gb_per_s = reference.value("copy_gbps", 0.0);
            copy.copy_fraction = 1.0;
            add(copy);
            for (const Checker& baseline : plan.baselines) {
                const auto timed = time_in(plan, baseline, rubric, error);
                if (!error.empty()) {
                    add(empty_row(name, shape, baseline.what, error));
                    continue;
                }
                BenchRow row = row_from(name, shape, baseline.what, timed, "reference");
                row.reference_over_this = timed.value("submission_ms", 0.0) / row.ms;
                add(row);
            }
        }
    }
    report.timing_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    show(bench_ending(report));
    return report;
}

std::string bench_title(const GpuInfo& gpu) {
    return terminal_text(fmt::format("cugrade bench on {} ({})\n", gpu.name, gpu.arch()));
}

std::string bench_header(const BenchReport& report) {
    const std::string builds =
        report.checkers == 0 ? "built no checkers ahead of the timing\n"
                             : fmt::format("built {} checker{} in {:.1f} s, {} at a time\n", report.checkers,
                                           report.checkers == 1 ? "" : "s", report.build_seconds, report.build_jobs);
    return terminal_text(builds + fmt::format("\n{:<10} {:<14} {:<10} {:>10} {:>9} {:>8} {:>8} {:>8} {:>14}\n",
                                              "exercise", "size", "what", "ms", "GB/s", "of copy", "spread", "samples",
                                              "reference/this"));
}

// "1024x1024", or "1024x1024 k=1024" with the parameters bench was given.
std::string size_label(const BenchRow& row) {
    return row.setting.empty() ? format_shape(row.shape) : format_shape(row.shape) + " " + row.setting;
}

std::string bench_row(const BenchRow& row) {
    if (!row.error.empty()) {
        return terminal_text(
            fmt::format("{:<10} {:<14} {:<10} failed: {}\n", row.exercise, size_label(row), row.what, row.error));
    }
    const std::string ms = row.what == "copy" ? "" : fmt::format("{:.4f}", row.ms);
    const std::string spread = row.what == "copy" ? "" : fmt::format("{:.2f}%", 100 * row.rse);
    const std::string samples = row.what == "copy" ? "" : std::to_string(row.samples);
    const std::string versus = row.reference_over_this > 0 ? fmt::format("{:.3f}", row.reference_over_this) : "";
    return terminal_text(fmt::format("{:<10} {:<14} {:<10} {:>10} {:>9.0f} {:>7.1f}% {:>8} {:>8} {:>14}\n",
                                     row.exercise, size_label(row), row.what, ms, row.gb_per_s, 100 * row.copy_fraction,
                                     spread, samples, versus));
}

std::string bench_ending(const BenchReport& report) {
    return terminal_text(fmt::format(
        "\ntimed {} speed test{} in {:.1f} s, one at a time\n\n"
        "GB/s counts the bytes each exercise must move; the copy counts bytes read and written. Spread: the relative\n"
        "standard error of the median time. Below the reference, each library baseline (exercise.yaml's `baselines`) with\n"
        "the reference's time over the baseline's, both measured alternately in one run: below 1, the reference is\n"
        "faster.\n",
        report.speed_tests, report.speed_tests == 1 ? "" : "s", report.timing_seconds));
}

nlohmann::json bench_to_json(const BenchReport& report) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : report.rows) {
        nlohmann::json r = {{"exercise", row.exercise}, {"shape", row.shape}, {"what", row.what}};
        if (!row.setting.empty()) {
            r["setting"] = row.setting;
        }
        if (!row.error.empty()) {
            r["error"] = row.error;
        } else {
            r.update({{"ms", row.ms},
                      {"gb_per_s", row.gb_per_s},
                      {"copy_fraction", row.copy_fraction},
                      {"median_rse", row.rse},
                      {"samples", row.samples}});
            if (row.reference_over_this > 0) {
                r["reference_over_this"] = row.reference_over_this;
            }
        }
        rows.push_back(r);
    }
    return valid_json_text({{"schema", "cugrade-bench"},
                            {"schema_version", bench_schema_version},
                            {"gpu",
                             {{"name", report.gpu.name},
                              {"compute_capability", fmt::format("{}.{}", report.gpu.major, report.gpu.minor)}}},
                            {"rows", rows}});
}

}  // namespace cugrade
