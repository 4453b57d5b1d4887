// course.yaml at a course's root: what a batch reads of the course beyond its exercises (docs/batch.md):
//   exercises: [sum, minmax, transpose]   # the assignment: the exercises a class is graded on
//   late: {...}                           # the late policy (late_policy.hpp)
//   arch: sm_90                           # the GPUs it grades on: what a machine without one compiles for
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "course/late_policy.hpp"

namespace cugrade {

struct CourseFile {
    std::vector<std::string> exercises;  // the assignment; empty when the file names none
    std::optional<LatePolicy> late;
    std::string arch;  // "sm_90"; empty when the file names none
};

// The course file, or an empty one when it is absent. `known_exercises` are the course's: a name not among them is
// an error at its line. Throws FileError at the offending place.
CourseFile load_course_file(const std::filesystem::path& file, const std::vector<std::string>& known_exercises);

}  // namespace cugrade
