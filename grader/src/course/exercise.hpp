// An exercise as the grader sees it: the files of exercises/NAME plus the instructor's reference.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "course/contract_rules.hpp"
#include "course/kit.hpp"
#include "course/rubric.hpp"

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

// A library's solution that `cugrade bench` times the reference against: built into the checker in the
// reference's place, so it runs with the harness's rights (a library such as cuBLAS needs the GPU in its own process).
struct Baseline {
    std::string name;               // "cub", "cublas": the bench row's name
    std::filesystem::path source;   // exercises/NAME/baselines/NAME.cu, defining the exercise's entry points
    std::vector<std::string> link;  // libraries the checker links for it ("cublas" links -lcublas)
};

// The course's part of an exercise's CPU self-check (cpu_build.hpp), as object files: built into the cache in a
// course, prebuilt in a kit's exercises/NAME/cpu. The checker is linked from the first eight, the runner from the
// last three and the submission's object.
inline const std::vector<std::string> cpu_course_object_files = {
    "harness.o",           "reference.o",    "plan_loop.o",   "case_record.o", "channel.o",
    "remote_submission.o", "block_runner.o", "cuda_on_cpu.o", "runner_main.o"};

struct Exercise {
    std::string name;
    std::string title;
    std::string submission_file;             // e.g. "sum.cu", the file a student writes
    std::filesystem::path directory;         // exercises/NAME
    std::filesystem::path contract_header;   // exercises/NAME/NAME.h
    std::filesystem::path harness_source;    // exercises/NAME/harness.cu
    std::filesystem::path reference_source;  // reference/NAME.cu
    // In a kit, the harness and the reference compiled into one object (exercises/NAME/harness.o) in place of both
    // sources; empty in a course.
    std::filesystem::path prebuilt_harness;
    // In a kit, the folder (exercises/NAME/cpu) of the harness, the reference and the CPU runtime compiled for the
    // CPU self-check (cpu_build.hpp); empty in a course, or a kit made without them.
    std::filesystem::path prebuilt_cpu_objects;
    std::vector<Baseline> baselines;             // exercise.yaml's `baselines`, for `cugrade bench`
    std::vector<std::string> entry_points;       // extern "C" functions both the submission and the reference define
    RubricChoices choices;                       // exercise.yaml's `operands` and `parameters`
    std::vector<std::string> checker_libraries;  // linked into the checker: a baseline's, in `cugrade bench` only
    // exercise.yaml's `readme_sections`: a diagnosis topic (diagnosis.hpp) -> the title of the section of
    // exercises/NAME/README.md that teaches its fix.
    std::map<std::string, std::string> readme_sections;
    ContractRules rules;  // exercise.yaml's `rules`: what the contract says of the submission's code

    // exercises/common beside it: what every exercise's harness is built with.
    std::filesystem::path common_dir() const { return directory.parent_path() / "common"; }
};

// The course at `root`: a kit's manifest read and its files checked against it (throws UsageError when changed).
Course open_course(const std::filesystem::path& root);

// Reads exercises/NAME/exercise.yaml. Throws UsageError for an unknown exercise, FileError for a bad description.
Exercise load_exercise(const Course& course, const std::string& name);

// Where the student README teaches the fix of a diagnosis's topic: "see \"The bounds check\" in
// exercises/matadd/README.md"; empty when the exercise names no section for it.
std::string readme_pointer(const Exercise& exercise, const std::string& topic);

// The rubric at `file`, fitted to the exercise (fit_rubric): its operands and parameters checked, defaults filled.
Rubric load_exercise_rubric(const Exercise& exercise, const std::filesystem::path& file);

}  // namespace cugrade
