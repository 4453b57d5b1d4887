// What a check found, as a table for people and as JSON for machines (docs/results-schema.md).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/exit_codes.hpp"
#include "base/gpu.hpp"
#include "base/diagnosis.hpp"
#include "score/score.hpp"
#include "base/stage_seconds.hpp"

namespace cugrade {

inline constexpr int results_schema_version = 1;

enum class Outcome { passed, failed, skipped, error };

// What a report says of a build: whether it worked, and the compiler's messages.
struct BuildOutcome {
    bool attempted = true;  // false: the submission's file was refused before building (a link out of its folder)
    bool ok = false;
    bool cached = false;
    std::string step;         // what failed: "compile" or "link"
    std::string diagnostics;  // the compiler's messages, paths shown as the user gave them
};
std::string to_string(Outcome outcome);

struct ExerciseReport {
    std::string exercise;
    std::string title;
    std::filesystem::path submission;
    std::filesystem::path rubric;
    BuildOutcome build;
    std::vector<std::string> violations;   // rules the submission's object broke (inspect.hpp); its cases did not run
    std::vector<std::string> protections;  // how the run was contained, in words, including what was not available
    std::vector<ScoredCase> cases;
    // What the failing visible cases share (failure_patterns.hpp); each case's own diagnosis is in its ScoredCase.
    std::vector<Diagnosis> patterns;
    std::vector<std::string> diagnosis_notes;  // why a diagnosis could not be made
    std::string program_output;                // what the processes of visible cases printed
    bool program_output_truncated = false;
    std::string hidden_program_output;  // what the processes that ran hidden cases printed: shown to instructors only
    bool hidden_program_output_truncated = false;
    std::optional<std::string> skipped_reason;  // why the cases did not run (no GPU)
    std::optional<std::string> error;           // cugrade failed on this exercise; its cases carry no verdict
    StageSeconds seconds;  // where grading it spent its time (no output shows it: a batch's figures)

    double points() const;
    double max_points() const;
    Outcome outcome() const;
};

// The report of an exercise cugrade could not grade: its cases carry no verdict, `why` says what went wrong.
ExerciseReport failed_exercise(const std::string& exercise, const std::string& title,
                               const std::filesystem::path& submission, const std::filesystem::path& rubric,
                               const std::string& why);

struct Report {
    std::string cugrade_version;
    GpuInfo gpu;
    std::vector<ExerciseReport> exercises;
    // Graded with a student kit's rubrics, which hold the visible cases only: the final grade has hidden cases too.
    bool visible_cases_only = false;
    // The CPU self-check (`check --cpu`): correctness cases run on the CPU; what it says is never a grade.
    bool cpu_self_check = false;

    double points() const;
    double max_points() const;
    Outcome outcome() const;
    ExitCode exit_code() const;
};

struct ReportOptions {
    bool show_hidden = false;  // instructors: show hidden cases' names and details
    int width = 100;           // the table's width in columns
};

// What a report may say about a case, the one rule every form of the report and every export follows: a hidden case
// keeps its verdict and points, but not its name, group, size, detail or measurements (unless an instructor asks).
// One entry per case of `exercise`, in order.
struct ShownCase {
    std::string name;
    nlohmann::json group;  // null when hidden
    std::string detail;
    nlohmann::json measurements;
    bool hidden = false;  // the case is hidden (whether or not this view shows it)
    // The cause a compute-sanitizer rerun found; of a hidden case this view does not show, only what names no size
    // or input: the summary and the hint.
    std::optional<Diagnosis> diagnosis = std::nullopt;
};
std::vector<ShownCase> shown_cases(const ExerciseReport& exercise, const ReportOptions& options);

// A diagnosis as one line: its summary, then its evidence in parentheses; its hint follows as "likely: ...".
std::string diagnosis_cause(const Diagnosis& diagnosis);

// The first line of a CPU self-check's report.
inline constexpr const char* cpu_self_check_line =
    "CPU self-check: correctness only, on the CPU; the grade needs an NVIDIA GPU";

void print_report(std::ostream& out, const Report& report, const ReportOptions& options);
nlohmann::json report_to_json(const Report& report, const ReportOptions& options);

}  // namespace cugrade
