// An exercise as the grader sees it: the files of exercises/NAME plus the instructor's reference.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cugrade/kit.hpp"

namespace cugrade {

// The folder that holds exercises/, reference/ and rubrics/; or a student kit, which holds prebuilt harnesses
// instead of reference/ (kit.hpp).
struct Course {
    std::filesystem::path root;
    std::optional<Kit> kit;

    std::filesystem::path exercises_dir() const { return root / "exercises"; }
    std::filesystem::path common_dir() const { return root / "exercises" / "common"; }
    std::filesystem::path rubric_for(const std::string& exercise) const {
        return root / "rubrics" / (exercise + ".yaml");
    }
    std::vector<std::string> exercise_names() const;  // sorted; every folder of exercises/ with an exercise.yaml
};

struct Exercise {
    std::string name;
    std::string title;
    std::string submission_file;            // e.g. "sum.cu", the file a student writes
    std::filesystem::path directory;        // exercises/NAME
    std::filesystem::path contract_header;  // exercises/NAME/NAME.h
    std::filesystem::path harness_source;   // exercises/NAME/harness.cu
    std::filesystem::path reference_source; // reference/NAME.cu
    // In a kit, the harness and the reference compiled into one object (exercises/NAME/harness.o) in place of both
    // sources; empty in a course.
    std::filesystem::path prebuilt_harness;
    std::filesystem::path baseline_source;  // exercises/NAME/baseline.cu, a library's solution; empty if none
    std::vector<std::string> entry_points;  // extern "C" functions both the submission and the reference define
};

// The course at `root`: a kit's manifest read and its files checked against it (throws UsageError when changed).
Course open_course(const std::filesystem::path& root);

// Reads exercises/NAME/exercise.yaml. Throws UsageError for an unknown exercise, FileError for a bad description.
Exercise load_exercise(const Course& course, const std::string& name);

}  // namespace cugrade
