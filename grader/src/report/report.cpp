#include "report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "base/diagnosis.hpp"
#include "base/text_safety.hpp"

namespace cugrade {
ExerciseReport failed_exercise(const std::string& exercise, const std::string& title,
                               const std::filesystem::path& submission, const std::filesystem::path& rubric,
                               const std::string& why) {
    ExerciseReport failed;
    failed.exercise = exercise;
    failed.title = title;
    failed.submission = submission;
    failed.rubric = rubric;
    failed.error = why;
    return failed;
}

std::string diagnosis_cause(const Diagnosis& diagnosis) {
    std::string text = diagnosis.summary;
    if (!diagnosis.evidence.empty()) {
        text += " (";
        for (std::size_t i = 0; i < diagnosis.evidence.size(); ++i) {
            text += (i == 0 ? "" : "; ") + diagnosis.evidence[i];
        }
        text += ")";
    }
    return text;
}

std::vector<ShownCase> shown_cases(const ExerciseReport& exercise, const ReportOptions& options) {
    std::vector<ShownCase> shown;
    int hidden = 0;
    for (const auto& c : exercise.cases) {
        if (c.plan.visibility == Visibility::hidden && !options.show_hidden) {
            std::optional<Diagnosis> diagnosis = c.diagnosis;
            if (diagnosis) {
                diagnosis->scope = "found on a hidden case";
                diagnosis->evidence.clear();
                diagnosis->tool_output.clear();
                diagnosis->map.clear();
            }
            shown.push_back({fmt::format("hidden-{}", ++hidden), nullptr,
                             c.detail.empty() ? "" : "details of hidden cases are not shown", nlohmann::json::object(),
                             true, std::move(diagnosis)});
        } else {
            shown.push_back({c.plan.id, c.plan.group, c.detail, c.measurements, c.plan.visibility == Visibility::hidden,
                             c.diagnosis});
        }
    }
    return shown;
}

namespace {

constexpr std::size_t max_output_lines = 40;

std::vector<std::string> wrap(const std::string& text, std::size_t width) {
    std::vector<std::string> lines;
    std::istringstream words(text);
    std::string word;
    std::string line;
    while (words >> word) {
        if (!line.empty() && line.size() + 1 + word.size() > width) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty() || lines.empty()) {
        lines.push_back(line);
    }
    return lines;
}

std::string first_lines(const std::string& text, std::size_t count, bool& cut) {
    std::istringstream lines(text);
    std::string result;
    std::string line;
    std::size_t n = 0;
    while (std::getline(lines, line)) {
        if (n++ == count) {
            cut = true;
            break;
        }
        result += "    " + line + "\n";
    }
    return result;
}

std::string gpu_description(const GpuInfo& gpu) {
    return gpu.available ? fmt::format("{} ({})", gpu.name, gpu.arch()) : "none: " + gpu.unavailable_reason;
}

// A case's diagnosis, on lines of its own under the case's row; its hint only where an earlier case did not give the
// same one (twenty cases with one cause say it once).
void print_diagnosis(std::ostream& out, const Diagnosis& diagnosis, int width, std::set<std::string>& hints_given) {
    const std::size_t text_width = width > 30 ? static_cast<std::size_t>(width) - 8 : 22;
    const std::string text = diagnosis_cause(diagnosis);
    const auto lines = wrap(text, text_width);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        out << (i == 0 ? "    " : "      ") << lines[i] << "\n";
    }
    if (!diagnosis.map.empty()) {
        out << "      where the wrong elements lie:\n";
        for (const auto& line : diagnosis.map) {
            out << "        " << line << "\n";
        }
    }
    if (!diagnosis.hint.empty() && hints_given.insert(diagnosis.hint).second) {
        for (const auto& line : wrap("likely: " + diagnosis.hint, text_width - 2)) {
            out << "      " << line << "\n";
        }
    }
}

void print_build(std::ostream& out, const ExerciseReport& exercise, const ReportOptions& options) {
    out << fmt::format("  build: {}{}\n",
                       !exercise.build.attempted ? "not attempted"
                       : exercise.build.ok       ? "ok"
                                                 : "failed to " + exercise.build.step,
                       exercise.build.cached ? " (cached)" : "");
    if (!exercise.violations.empty()) {
        out << "  rejected before running:\n";
        for (const auto& violation : exercise.violations) {
            const auto lines = wrap(violation, static_cast<std::size_t>(std::max(40, options.width - 8)));
            for (std::size_t i = 0; i < lines.size(); ++i) {
                out << (i == 0 ? "    " : "      ") << lines[i] << "\n";
            }
        }
    }
}

// The case table's rows: each case as scored, and as the report may show it.
struct CaseRows {
    std::vector<ShownCase> shown;
    std::vector<ScoredCase> rows;
};

// When nothing ran (the build failed, or no GPU), one row says so for every case.
CaseRows case_rows(const ExerciseReport& exercise, const ReportOptions& options) {
    std::vector<ShownCase> shown = shown_cases(exercise, options);
    std::vector<ScoredCase> rows = exercise.cases;
    const bool none_ran = !rows.empty() && std::all_of(rows.begin(), rows.end(), [&](const ScoredCase& c) {
        return (c.status == Status::build_failed || c.status == Status::skipped ||
                (c.status == Status::rejected && !exercise.violations.empty())) &&
               c.status == rows[0].status;
    });
    if (none_ran) {
        ScoredCase all = rows[0];
        all.points = exercise.points();
        all.plan.max_points = exercise.max_points();
        shown = {{fmt::format("all {} cases", rows.size()), nullptr, rows[0].detail, nlohmann::json::object()}};
        rows = {all};
    }
    return {std::move(shown), std::move(rows)};
}

constexpr std::size_t status_width = 13;
constexpr std::size_t points_width = 11;

struct ColumnWidths {
    std::size_t name;
    std::size_t detail;
};

ColumnWidths column_widths(const std::vector<ShownCase>& shown, const ReportOptions& options) {
    std::size_t name_width = 4;
    for (const auto& s : shown) {
        name_width = std::max(name_width, s.name.size());
    }
    const std::size_t used = 2 + name_width + 2 + status_width + 2 + 2 + points_width;
    const std::size_t detail_width = options.width > static_cast<int>(used + 20) ? options.width - used : 20;
    return {name_width, detail_width};
}

void print_case_row(std::ostream& out, const ScoredCase& c, const ShownCase& shown, const ColumnWidths& widths) {
    const auto detail = wrap(shown.detail, widths.detail);
    const std::string points = fmt::format("{}/{}", format_points(c.points), format_points(c.plan.max_points));
    out << fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:>{}}\n", shown.name, widths.name, display_name(c.status),
                       status_width, detail[0], widths.detail, points, points_width);
    for (std::size_t line = 1; line < detail.size(); ++line) {
        out << fmt::format("  {:<{}}  {:<{}}  {}\n", "", widths.name, "", status_width, detail[line]);
    }
}

void print_case_table(std::ostream& out, const ExerciseReport& exercise, const ReportOptions& options) {
    const auto [shown, rows] = case_rows(exercise, options);
    const ColumnWidths widths = column_widths(shown, options);
    out << fmt::format("\n  {:<{}}  {:<{}}  {:<{}}  {:>{}}\n", "case", widths.name, "status", status_width, "detail",
                       widths.detail, "points", points_width);
    std::set<std::string> hints_given;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        print_case_row(out, rows[i], shown[i], widths);
        if (shown[i].diagnosis) {
            print_diagnosis(out, *shown[i].diagnosis, options.width, hints_given);
        }
    }
    out << fmt::format("  {:<{}}  {:>{}}\n\n", "total", widths.name + 2 + status_width + 2 + widths.detail,
                       fmt::format("{}/{}", format_points(exercise.points()), format_points(exercise.max_points())),
                       points_width);
}

void print_patterns(std::ostream& out, const std::vector<Diagnosis>& patterns, int width) {
    if (patterns.empty()) {
        return;
    }
    out << "  what the failing cases share:\n";
    for (const auto& pattern : patterns) {
        for (const auto& line : wrap(pattern.summary + " (" + pattern.scope + ")", width > 30 ? width - 6 : 24)) {
            out << "    " << line << "\n";
        }
        for (const auto& line : wrap("likely: " + pattern.hint, width > 30 ? width - 8 : 22)) {
            out << "      " << line << "\n";
        }
    }
    out << "\n";
}

void print_diagnosis_notes(std::ostream& out, const std::vector<std::string>& notes, int width) {
    for (const auto& note : notes) {
        const auto lines = wrap(note, width > 30 ? width - 6 : 24);
        for (std::size_t i = 0; i < lines.size(); ++i) {
            out << (i == 0 ? "  " : "    ") << lines[i] << "\n";
        }
    }
    if (!notes.empty()) {
        out << "\n";
    }
}

void print_compiler_messages(std::ostream& out, const BuildOutcome& build) {
    if (!build.diagnostics.empty()) {
        bool cut = false;
        out << (build.ok ? "  compiler warnings:\n" : "  compiler messages:\n");
        out << first_lines(build.diagnostics, max_output_lines, cut);
        out << (cut ? "    ... (more in the JSON report)\n\n" : "\n");
    }
}

void print_how_it_ran(std::ostream& out, const ExerciseReport& exercise) {
    if (exercise.skipped_reason) {
        out << fmt::format("  correctness and speed need an NVIDIA GPU: {}\n\n", *exercise.skipped_reason);
    }
    if (!exercise.protections.empty()) {
        out << "  the program ran contained by:\n";
        for (const auto& protection : exercise.protections) {
            out << "    " << protection << "\n";
        }
        out << "\n";
    }
}

void print_program_output(std::ostream& out, const ExerciseReport& exercise, const ReportOptions& options) {
    if (!exercise.program_output.empty() && exercise.outcome() != Outcome::passed) {
        bool cut = exercise.program_output_truncated;
        out << "  the program printed:\n" << first_lines(exercise.program_output, max_output_lines, cut);
        out << (cut ? "    ... (cut short)\n\n" : "\n");
    }
    if (options.show_hidden && !exercise.hidden_program_output.empty()) {
        bool cut = exercise.hidden_program_output_truncated;
        out << "  the program printed during hidden cases:\n"
            << first_lines(exercise.hidden_program_output, max_output_lines, cut);
        out << (cut ? "    ... (cut short)\n\n" : "\n");
    }
}

void print_exercise(std::ostream& out, const ExerciseReport& exercise, const ReportOptions& options) {
    out << fmt::format("{} ({}): {}\n", exercise.exercise, exercise.title, exercise.submission.string());
    if (exercise.error) {
        out << fmt::format("  cugrade could not grade this exercise: {}\n\n", *exercise.error);
        return;
    }
    print_build(out, exercise, options);
    print_case_table(out, exercise, options);
    print_patterns(out, exercise.patterns, options.width);
    print_diagnosis_notes(out, exercise.diagnosis_notes, options.width);
    print_compiler_messages(out, exercise.build);
    print_how_it_ran(out, exercise);
    print_program_output(out, exercise, options);
}

nlohmann::json gpu_to_json(const GpuInfo& gpu) {
    if (!gpu.available) {
        return {{"available", false}, {"reason", gpu.unavailable_reason}};
    }
    return {
        {"available", true}, {"name", gpu.name}, {"compute_capability", fmt::format("{}.{}", gpu.major, gpu.minor)}};
}

// Patterns are found among visible cases only, so that none of them speaks of a hidden case.
nlohmann::json patterns_json(const ExerciseReport& exercise) {
    nlohmann::json patterns = nlohmann::json::array();
    for (const auto& pattern : exercise.patterns) {
        patterns.push_back({{"kind", pattern.kind},
                            {"summary", pattern.summary},
                            {"scope", pattern.scope},
                            {"evidence", pattern.evidence},
                            {"hint", pattern.hint}});
    }
    return patterns;
}

nlohmann::json diagnosis_json(const std::optional<Diagnosis>& diagnosis) {
    if (!diagnosis) {
        return nullptr;
    }
    return {{"kind", diagnosis->kind},
            {"summary", diagnosis->summary},
            {"category", diagnosis->category},
            {"topic", diagnosis->topic},
            {"scope", diagnosis->scope},
            {"evidence", diagnosis->evidence},
            {"hint", diagnosis->hint},
            {"tool_output", diagnosis->tool_output},
            {"map", diagnosis->map}};
}

nlohmann::json optional_text(const std::optional<std::string>& text) {
    return text ? nlohmann::json(*text) : nlohmann::json(nullptr);
}

}  // namespace

std::string to_string(Outcome outcome) {
    switch (outcome) {
        case Outcome::passed: return "passed";
        case Outcome::failed: return "failed";
        case Outcome::skipped: return "skipped";
        case Outcome::error: return "error";
    }
    return "error";
}

double ExerciseReport::points() const {
    double total = 0.0;
    for (const auto& c : cases) {
        total += c.points;
    }
    return round_points(total);
}

double ExerciseReport::max_points() const {
    double total = 0.0;
    for (const auto& c : cases) {
        total += c.plan.max_points;
    }
    return round_points(total);
}

Outcome ExerciseReport::outcome() const {
    if (error) {
        return Outcome::error;
    }
    if (std::any_of(cases.begin(), cases.end(), [](const auto& c) { return c.status == Status::harness_error; })) {
        return Outcome::error;
    }
    if (std::any_of(cases.begin(), cases.end(),
                    [](const auto& c) { return c.status != Status::passed && c.status != Status::skipped; })) {
        return Outcome::failed;
    }
    if (std::any_of(cases.begin(), cases.end(), [](const auto& c) { return c.status == Status::skipped; })) {
        return Outcome::skipped;
    }
    return Outcome::passed;
}

double Report::points() const {
    double total = 0.0;
    for (const auto& e : exercises) {
        total += e.points();
    }
    return round_points(total);
}

double Report::max_points() const {
    double total = 0.0;
    for (const auto& e : exercises) {
        total += e.max_points();
    }
    return round_points(total);
}

Outcome Report::outcome() const {
    Outcome worst = Outcome::passed;
    for (const auto& e : exercises) {
        const Outcome o = e.outcome();
        // error outranks failed, failed outranks skipped, skipped outranks passed
        const auto rank = [](Outcome x) {
            return x == Outcome::error ? 3 : x == Outcome::failed ? 2 : x == Outcome::skipped ? 1 : 0;
        };
        if (rank(o) > rank(worst)) {
            worst = o;
        }
    }
    return worst;
}

ExitCode Report::exit_code() const {
    switch (outcome()) {
        case Outcome::passed: return ExitCode::passed;
        case Outcome::failed: return ExitCode::failed;
        case Outcome::skipped: return ExitCode::skipped;
        case Outcome::error: return ExitCode::internal_error;
    }
    return ExitCode::internal_error;
}

void print_report(std::ostream& terminal, const Report& report, const ReportOptions& options) {
    std::ostringstream out;
    if (report.cpu_self_check) {
        out << cpu_self_check_line << "\n";
    }
    out << fmt::format("cugrade {} on GPU {}\n\n", report.cugrade_version, gpu_description(report.gpu));
    for (const auto& exercise : report.exercises) {
        print_exercise(out, exercise, options);
    }
    out << fmt::format("result: {}, {}/{} points\n", to_string(report.outcome()), format_points(report.points()),
                       format_points(report.max_points()));
    if (report.visible_cases_only) {
        out << "this kit checks the visible cases only: the final grade also has hidden cases\n";
    }
    terminal << terminal_text(out.str());
}

nlohmann::json report_to_json(const Report& report, const ReportOptions& options) {
    nlohmann::json exercises = nlohmann::json::array();
    for (const auto& exercise : report.exercises) {
        const auto shown = shown_cases(exercise, options);
        nlohmann::json cases = nlohmann::json::array();
        for (std::size_t i = 0; i < exercise.cases.size(); ++i) {
            const auto& c = exercise.cases[i];
            cases.push_back({{"id", shown[i].name},
                             {"group", shown[i].group},
                             {"visibility", to_string(c.plan.visibility)},
                             {"status", to_string(c.status)},
                             {"detail", shown[i].detail},
                             {"points", c.points},
                             {"max_points", c.plan.max_points},
                             {"measurements", shown[i].measurements},
                             {"diagnosis", diagnosis_json(shown[i].diagnosis)}});
        }
        exercises.push_back(
            {{"exercise", exercise.exercise},
             {"title", exercise.title},
             {"submission", exercise.submission.string()},
             {"rubric", exercise.rubric.string()},
             {"outcome", to_string(exercise.outcome())},
             {"points", exercise.points()},
             {"max_points", exercise.max_points()},
             {"build",
              {{"attempted", exercise.build.attempted},
               {"ok", exercise.build.ok},
               {"cached", exercise.build.cached},
               {"failed_step", exercise.build.ok || !exercise.build.attempted ? nlohmann::json(nullptr)
                                                                              : nlohmann::json(exercise.build.step)},
               {"diagnostics", exercise.build.diagnostics}}},
             {"violations", exercise.violations},
             {"protections", exercise.protections},
             {"skipped_reason", optional_text(exercise.skipped_reason)},
             {"error", optional_text(exercise.error)},
             {"cases", cases},
             {"patterns", patterns_json(exercise)},
             {"diagnosis_notes", exercise.diagnosis_notes},
             {"program_output", exercise.program_output},
             {"program_output_truncated", exercise.program_output_truncated},
             {"hidden_program_output", options.show_hidden ? nlohmann::json(exercise.hidden_program_output) : nullptr},
             {"hidden_program_output_truncated",
              options.show_hidden ? nlohmann::json(exercise.hidden_program_output_truncated) : nullptr}});
    }
    return valid_json_text({{"schema", "cugrade-results"},
                            {"schema_version", results_schema_version},
                            {"cugrade_version", report.cugrade_version},
                            {"gpu", gpu_to_json(report.gpu)},
                            {"outcome", to_string(report.outcome())},
                            {"exit_code", to_int(report.exit_code())},
                            {"points", report.points()},
                            {"max_points", report.max_points()},
                            {"visible_cases_only", report.visible_cases_only},
                            {"cpu_self_check", report.cpu_self_check},
                            {"exercises", exercises}});
}

}  // namespace cugrade
