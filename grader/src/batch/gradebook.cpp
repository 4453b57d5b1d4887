#include "batch/gradebook.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/csv.hpp"
#include "score/score.hpp"

namespace cugrade {

nlohmann::json student_row(const StudentFolder& student, const std::vector<ExercisePlan>& plans, const Report& report,
                           const std::vector<std::string>& notes) {
    nlohmann::json exercises = nlohmann::json::object();
    bool any_present = false, any_error = false, any_build_failed = false, any_skipped = false;
    for (std::size_t e = 0; e < plans.size(); ++e) {
        const ExercisePlan& plan = plans[e];
        nlohmann::json groups = nlohmann::json::object();
        for (const auto& group : plan.groups) {
            groups[group] = 0.0;
        }
        double points = 0.0;
        const auto graded = std::find_if(report.exercises.begin(), report.exercises.end(),
                                         [&](const ExerciseReport& r) { return r.exercise == plan.exercise.name; });
        if (graded != report.exercises.end()) {
            any_present = true;
            any_error = any_error || graded->error.has_value();
            any_build_failed = any_build_failed || (graded->build.attempted && !graded->build.ok && !graded->error);
            any_skipped = any_skipped || graded->skipped_reason.has_value();
            for (const ScoredCase& c : graded->cases) {
                groups[c.plan.group] = round_points(groups[c.plan.group].get<double>() + c.points);
            }
            points = graded->points();
        }
        exercises[plan.exercise.name] = {{"points", points}, {"max", plan.max_points}, {"groups", groups}};
    }
    const std::string status = !any_present       ? "missing"
                               : any_error        ? "error"
                               : any_build_failed ? "build_failed"
                               : any_skipped      ? "skipped"
                                                  : "graded";
    return {{"id", student.id},
            {"name", student.name},
            {"email", student.email},
            {"submitted_at", student.submitted_at ? nlohmann::json(*student.submitted_at) : nlohmann::json()},
            {"status", status},
            {"notes", notes},
            {"exercises", exercises}};
}

bool counts_as_failed(const std::string& status) { return status == "error" || status == "build_failed"; }

RowFigures figures_of(const nlohmann::json& row, const std::vector<ExercisePlan>& plans,
                      const std::map<std::string, RosterEntry>& roster, const std::optional<LatePolicy>& late) {
    RowFigures f;
    const auto person = roster.find(row.at("id").get<std::string>());
    f.name = person != roster.end() ? person->second.name : row.value("name", std::string());
    f.email = person != roster.end() ? person->second.email : row.value("email", std::string());
    f.section = person != roster.end() ? person->second.section : "";
    const auto& time = row.value("submitted_at", nlohmann::json());
    f.submitted_at = time.is_string() ? time.get<std::string>() : "";
    for (const auto& plan : plans) {
        f.earned += row.at("exercises").value(plan.exercise.name, nlohmann::json::object()).value("points", 0.0);
    }
    f.earned = round_points(f.earned);
    if (late && !f.submitted_at.empty()) {
        f.late = lateness(*late, f.submitted_at);
    }
    f.penalty = round_points(f.earned * f.late.penalty_fraction);
    f.total = round_points(f.earned - f.penalty);
    return f;
}

std::string gradebook_csv(const std::vector<ExercisePlan>& plans, const std::vector<nlohmann::json>& rows,
                          const std::vector<RowFigures>& figures) {
    std::vector<std::string> header = {"id", "name", "email", "section", "submitted_at", "late_days"};
    std::vector<std::string> possible = {"(points possible)", "", "", "", "", ""};
    for (const auto& plan : plans) {
        for (const auto& group : plan.groups) {
            header.push_back(plan.exercise.name + ":" + group);
            possible.push_back(format_points(round_points(plan.group_max.at(group))));
        }
        header.push_back(plan.exercise.name);
        possible.push_back(format_points(plan.max_points));
    }
    const std::string total_max = format_points(total_possible(plans));
    header.insert(header.end(), {"penalty", "total", "max", "status", "notes"});
    possible.insert(possible.end(), {"", total_max, total_max, "", ""});
    std::string text = csv::row(header) + csv::row(possible);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const nlohmann::json& row = rows[r];
        const RowFigures& f = figures[r];
        std::vector<std::string> cells = {row.at("id").get<std::string>(), f.name, f.email, f.section, f.submitted_at,
                                          std::to_string(f.late.days)};
        for (const auto& plan : plans) {
            const auto& exercise = row.at("exercises").value(plan.exercise.name, nlohmann::json::object());
            const auto& groups = exercise.value("groups", nlohmann::json::object());
            for (const auto& group : plan.groups) {
                cells.push_back(format_points(groups.value(group, 0.0)));
            }
            cells.push_back(format_points(exercise.value("points", 0.0)));
        }
        const std::vector<std::string> notes = row.value("notes", std::vector<std::string>{});
        cells.insert(cells.end(), {format_points(f.penalty), format_points(f.total), total_max,
                                   row.at("status").get<std::string>(), fmt::format("{}", fmt::join(notes, "; "))});
        text += csv::row(cells);
    }
    return text;
}

std::string canvas_csv(const std::vector<ExercisePlan>& plans, const std::vector<nlohmann::json>& rows,
                       const std::vector<RowFigures>& figures, const std::string& assignment) {
    std::string text = csv::row({"Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment}) +
                       csv::row({"Points Possible", "", "", "", "", format_points(total_possible(plans))});
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const RowFigures& f = figures[r];
        const std::string id = rows[r].at("id").get<std::string>();
        text += csv::row({f.name.empty() ? id : f.name, "", id, f.email, f.section, format_points(f.total)});
    }
    return text;
}

}  // namespace cugrade
