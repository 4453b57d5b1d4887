// Which of a course's exercises a class is graded on (docs/batch.md, "What it grades").
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace cugrade {

struct ExerciseChoice {
    std::vector<std::string> names;     // sorted
    std::string origin;                 // why these: "named by -e", "the assignment in course.yaml", ...
    std::vector<std::string> left_out;  // the course's other exercises
};

// `-e` names the exercises; else course.yaml's `exercises`; else those that some student handed in a file for, so
// that a class that did one exercise is graded out of that one's points; else (no one handed in anything) all.
// `handed_in` is asked only in the third case.
ExerciseChoice choose_exercises(const std::vector<std::string>& course_exercises, const std::vector<std::string>& named,
                                const std::vector<std::string>& assignment,
                                const std::function<std::vector<std::string>()>& handed_in);

// "dot, sum (named by -e; not graded: matadd, minmax, scan, transpose)"
std::string describe(const ExerciseChoice& choice);

}  // namespace cugrade
