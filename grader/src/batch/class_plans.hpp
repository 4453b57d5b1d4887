// What a batch grades each exercise of a class against: the exercise, its rubric, the points of each group, and the
// digests of the course files its grading depends on. Loaded once for a class.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "course/exercise.hpp"
#include "course/rubric.hpp"

namespace cugrade {

// One exercise of the class, as every student's file of it is graded and counted.
struct ExercisePlan {
    Exercise exercise;
    Rubric rubric;
    std::vector<std::string> groups;          // in rubric order, the speed test last
    std::map<std::string, double> group_max;  // points possible per group
    double max_points = 0.0;
    std::string revision;  // digests of the course files the grading depends on
};

// The exercises `chosen` (every exercise of the course when empty), in name order, each with its rubric; throws
// UsageError for a course without exercises or a rubric of another exercise.
std::vector<ExercisePlan> load_plans(const Course& course, const std::vector<std::string>& chosen);

// The files each exercise grades, in the order of `plans`: what a class layout looks for in a student's folder.
std::vector<std::pair<std::string, std::string>> graded_files(const std::vector<ExercisePlan>& plans);

// The points possible over all of `plans`.
double total_possible(const std::vector<ExercisePlan>& plans);

}  // namespace cugrade
