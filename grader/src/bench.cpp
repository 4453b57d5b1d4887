#include "cugrade/bench.hpp"

#include <fmt/format.h>

#include <sstream>

#include "cugrade/api_policy.hpp"
#include "cugrade/error.hpp"
#include "cugrade/grading.hpp"
#include "file_io.hpp"
#include "speed_metric.hpp"
#include "text_safety.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// Grades `source` as a submission with a rubric that holds only the speed test (whose shape the caller has set), and
// returns the speed case's measurements, or an error.
nlohmann::json time_as_submission(const GradingContext& context, const Exercise& exercise, const fs::path& source,
                                  const Rubric& rubric, std::string& error) {
    SubmissionFile file;
    file.shown = source;
    file.name = exercise.submission_file;
    try {
        file.bytes = read_file(source);
        const ExerciseReport report = grade_exercise(context, exercise, rubric, file);
        if (!report.build.ok) {
            error = fmt::format("'{}' did not build:\n{}", source.string(), report.build.diagnostics);
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
    BenchReport report;
    GradingSetup setup;
    setup.nvcc = options.nvcc;
    setup.cache_dir = options.cache_dir;
    setup.cache_max_bytes = options.cache_max_bytes;
    setup.submissions = course.root / "reference";
    // The reference timed against itself or a baseline may come out "slow" by the rubric's tiers: a diagnosis would
    // then profile it under Nsight Compute, minutes that tell bench nothing.
    setup.diagnose = false;
    const GradingContext context = make_grading_context(course, setup);
    report.gpu = context.gpu;
    if (!report.gpu.available) {
        return report;
    }

    const std::vector<std::string> names = options.exercises.empty() ? course.exercise_names() : options.exercises;
    for (const auto& name : names) {
        const Exercise exercise = load_exercise(course, name);
        Rubric rubric = load_exercise_rubric(exercise, course.rubric_for(name));
        if (!rubric.speed) {
            continue;
        }
        rubric.groups.clear();  // the speed test alone
        // The reference and the baseline are the course's own code: a library's solution, and whatever it calls.
        rubric.apis.allowed_libraries = known_libraries();
        rubric.apis.allowed_functions = {"*"};
        std::vector<Shape> shapes = rubric.dimensions == 1 ? options.sizes : options.shapes;
        if (shapes.empty()) {
            shapes = {rubric.speed->shape};
        }
        for (const Shape& shape : shapes) {
            if (shape.size() != rubric.dimensions) {
                throw UsageError(fmt::format("{} takes {}, not {}", name, rubric.dimensions == 1 ? "--size" : "--shape",
                                             format_shape(shape)));
            }
            rubric.speed->shape = shape;
            if (options.progress != nullptr) {
                *options.progress << fmt::format("cugrade: timing {} at {}", name, format_shape(shape)) << std::endl;
            }
            std::string error;
            const auto reference = time_as_submission(context, exercise, exercise.reference_source, rubric, error);
            if (!error.empty()) {
                report.rows.push_back(empty_row(name, shape, "reference", error));
                continue;
            }
            report.rows.push_back(row_from(name, shape, "reference", reference));
            BenchRow copy = empty_row(name, shape, "copy");
            copy.gb_per_s = reference.value("copy_gbps", 0.0);
            copy.copy_fraction = 1.0;
            report.rows.push_back(copy);
            // A baseline takes the reference's place in the checker, and the reference is timed against it as a
            // submission: the run's reference time is the baseline's, and its ratio the reference's over it.
            for (const Baseline& baseline : exercise.baselines) {
                if (!fs::is_regular_file(baseline.source)) {
                    report.rows.push_back(empty_row(name, shape, baseline.name,
                                                    fmt::format("'{}' is missing", baseline.source.string())));
                    continue;
                }
                Exercise against = exercise;
                against.reference_source = baseline.source;
                against.checker_libraries = baseline.link;
                const auto timed = time_as_submission(context, against, exercise.reference_source, rubric, error);
                if (!error.empty()) {
                    report.rows.push_back(empty_row(name, shape, baseline.name, error));
                    continue;
                }
                BenchRow row = row_from(name, shape, baseline.name, timed, "reference");
                row.reference_over_this = timed.value("submission_ms", 0.0) / row.ms;
                report.rows.push_back(row);
            }
        }
    }
    return report;
}

void print_bench(std::ostream& terminal, const BenchReport& report) {
    std::ostringstream out;
    out << fmt::format("cugrade bench on {} ({})\n\n", report.gpu.name, report.gpu.arch());
    out << fmt::format("{:<10} {:<14} {:<10} {:>10} {:>9} {:>8} {:>8} {:>8} {:>14}\n", "exercise", "size", "what",
                       "ms", "GB/s", "of copy", "spread", "samples", "reference/this");
    for (const auto& row : report.rows) {
        if (!row.error.empty()) {
            out << fmt::format("{:<10} {:<14} {:<10} failed: {}\n", row.exercise, format_shape(row.shape), row.what,
                               row.error);
            continue;
        }
        const std::string ms = row.what == "copy" ? "" : fmt::format("{:.4f}", row.ms);
        const std::string spread = row.what == "copy" ? "" : fmt::format("{:.2f}%", 100 * row.rse);
        const std::string samples = row.what == "copy" ? "" : std::to_string(row.samples);
        const std::string versus = row.reference_over_this > 0 ? fmt::format("{:.3f}", row.reference_over_this) : "";
        out << fmt::format("{:<10} {:<14} {:<10} {:>10} {:>9.0f} {:>7.1f}% {:>8} {:>8} {:>14}\n", row.exercise,
                           format_shape(row.shape), row.what, ms, row.gb_per_s, 100 * row.copy_fraction, spread,
                           samples, versus);
    }
    out << "\nGB/s counts the bytes each exercise must move; the copy counts bytes read and written. Spread: the relative\n"
           "standard error of the median time. Below the reference, each library baseline (exercise.yaml's `baselines`) with\n"
           "the reference's time over the baseline's, both measured alternately in one run: below 1, the reference is\n"
           "faster.\n";
    terminal << terminal_text(out.str());
}

nlohmann::json bench_to_json(const BenchReport& report) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : report.rows) {
        nlohmann::json r = {{"exercise", row.exercise}, {"shape", row.shape}, {"what", row.what}};
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
            {"gpu", {{"name", report.gpu.name}, {"compute_capability", fmt::format("{}.{}", report.gpu.major, report.gpu.minor)}}},
            {"rows", rows}});
}

}  // namespace cugrade
