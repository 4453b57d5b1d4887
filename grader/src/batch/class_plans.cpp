#include "batch/class_plans.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.hpp"
#include "score/score.hpp"
#include "base/file_io.hpp"

namespace cugrade {
namespace fs = std::filesystem;

namespace {

// What a student's grade depends on from the course: the exercise's files, the shared harness code, the rubric.
std::string course_revision(const Course& course, const Exercise& exercise, const Rubric& rubric) {
    std::string revision;
    for (const fs::path& file :
         {exercise.contract_header, exercise.harness_source, exercise.reference_source, rubric.file}) {
        revision += fmt::format("  {} {}\n", file.filename().string(), file_digest(file));
    }
    for (const auto& file : regular_files_under(course.common_dir())) {
        revision +=
            fmt::format("  common/{} {}\n", file.lexically_relative(course.common_dir()).string(), file_digest(file));
    }
    return revision;
}

}  // namespace

std::vector<ExercisePlan> load_plans(const Course& course, const std::vector<std::string>& chosen) {
    std::vector<std::string> names = chosen.empty() ? course.exercise_names() : chosen;
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    if (names.empty()) {
        throw UsageError(fmt::format("the course at '{}' has no exercises", course.root.string()));
    }
    std::vector<ExercisePlan> plans;
    for (const auto& name : names) {
        ExercisePlan plan;
        plan.exercise = load_exercise(course, name);
        plan.rubric = load_exercise_rubric(plan.exercise, course.rubric_for(name));
        if (plan.rubric.exercise != name) {
            throw UsageError(fmt::format("rubric '{}' is for exercise '{}', not '{}'", plan.rubric.file.string(),
                                         plan.rubric.exercise, name));
        }
        for (const CasePlan& c : plan_cases(plan.rubric)) {
            if (!plan.group_max.contains(c.group)) {
                plan.groups.push_back(c.group);
            }
            plan.group_max[c.group] += c.max_points;
            plan.max_points += c.max_points;
        }
        plan.max_points = round_points(plan.max_points);
        plan.revision = course_revision(course, plan.exercise, plan.rubric);
        plans.push_back(std::move(plan));
    }
    return plans;
}

std::vector<std::pair<std::string, std::string>> graded_files(const std::vector<ExercisePlan>& plans) {
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& plan : plans) {
        files.emplace_back(plan.exercise.name, plan.exercise.submission_file);
    }
    return files;
}

double total_possible(const std::vector<ExercisePlan>& plans) {
    double total = 0.0;
    for (const auto& plan : plans) {
        total += plan.max_points;
    }
    return round_points(total);
}

}  // namespace cugrade
