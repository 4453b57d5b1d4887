// Which exercises a class is graded on (exercise_choice.hpp).
#include "course/exercise_choice.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cugrade {

namespace {

std::vector<std::string> sorted_unique(std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

}  // namespace

ExerciseChoice choose_exercises(const std::vector<std::string>& course_exercises, const std::vector<std::string>& named,
                                const std::vector<std::string>& assignment,
                                const std::function<std::vector<std::string>()>& handed_in) {
    ExerciseChoice choice;
    if (!named.empty()) {
        choice = {sorted_unique(named), "named by -e", {}};
    } else if (!assignment.empty()) {
        choice = {sorted_unique(assignment), "the assignment in course.yaml", {}};
    } else if (std::vector<std::string> found = sorted_unique(handed_in()); !found.empty()) {
        choice = {std::move(found), "handed in by some student", {}};
    } else {
        choice = {sorted_unique(course_exercises), "every exercise of the course: no student handed in a file", {}};
    }
    for (const auto& name : sorted_unique(course_exercises)) {
        if (!std::binary_search(choice.names.begin(), choice.names.end(), name)) {
            choice.left_out.push_back(name);
        }
    }
    return choice;
}

std::string describe(const ExerciseChoice& choice) {
    return fmt::format(
        "{} ({}{})", fmt::join(choice.names, ", "), choice.origin,
        choice.left_out.empty() ? "" : fmt::format("; not graded: {}", fmt::join(choice.left_out, ", ")));
}

}  // namespace cugrade
