// A class's gradebook: each student's row (row.json, with the student's status), and the gradebook CSV and its
// Canvas variant made from all the rows, with the roster's names and the late policy's penalties.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "batch/class_layout.hpp"
#include "batch/class_plans.hpp"
#include "report/report.hpp"
#include "course/late_policy.hpp"
#include "batch/roster.hpp"

namespace cugrade {

// The gradebook's view of one student: row.json in the student's folder. Its status: missing (nothing handed in),
// error, build_failed, skipped or graded, the first that holds of any exercise.
nlohmann::json student_row(const StudentFolder& student, const std::vector<ExercisePlan>& plans, const Report& report,
                           const std::vector<std::string>& notes);

// A row that lost its points to cugrade or the compiler rather than to wrong answers: counted as failed.
bool counts_as_failed(const std::string& status);

// One gradebook row's figures, as both the gradebook and its Canvas variant need them.
struct RowFigures {
    std::string name, email, section, submitted_at;
    Lateness late;
    double earned = 0.0;   // before the penalty
    double penalty = 0.0;  // points
    double total = 0.0;
};

// A row's figures, its name and section from the roster where the student is on it, its penalty from the late policy.
RowFigures figures_of(const nlohmann::json& row, const std::vector<ExercisePlan>& plans,
                      const std::map<std::string, RosterEntry>& roster, const std::optional<LatePolicy>& late);

// gradebook.csv: a row per student, each group's points and each exercise's, the penalty and the total, after a row
// of the points possible.
std::string gradebook_csv(const std::vector<ExercisePlan>& plans, const std::vector<nlohmann::json>& rows,
                          const std::vector<RowFigures>& figures);

// Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then the assignment's column, with
// a "Points Possible" row first. Canvas matches rows by SIS User ID (the student's id here).
std::string canvas_csv(const std::vector<ExercisePlan>& plans, const std::vector<nlohmann::json>& rows,
                       const std::vector<RowFigures>& figures, const std::string& assignment);

}  // namespace cugrade
