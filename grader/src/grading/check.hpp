// `cugrade check`: for each exercise, rubric -> build -> run -> check -> score -> report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "course/exercise.hpp"
#include "grading/grading.hpp"
#include "report/report.hpp"
#include "sandbox/sandbox.hpp"

namespace cugrade {

struct CheckOptions {
    std::filesystem::path submission_dir = ".";
    std::vector<std::string> exercises;           // empty: every exercise whose file the folder holds
    std::optional<std::filesystem::path> rubric;  // instead of rubrics/NAME.yaml (one exercise only)
    std::optional<std::string> nvcc;
    std::filesystem::path cache_dir;                   // empty: no cache
    std::uint64_t cache_max_bytes = 0;                 // the cache's size limit (0: none)
    Containment required_sandbox = Containment::none;  // --require-sandbox
    std::ostream* progress = nullptr;                  // one line per step, for people waiting
    std::string course_origin;                         // how the course was found (course_locator.hpp), said first
    bool diagnose = true;                              // rerun failing and slow cases for a diagnosis (--no-diagnosis)
    CpuSelfCheck cpu = CpuSelfCheck::without_gpu;      // --cpu, --no-cpu
};

// Grades every selected exercise. Bad usage or a bad rubric throws UsageError before anything is built; a failure
// while grading one exercise is recorded in its report, and the others are still graded.
Report check(const Course& course, const CheckOptions& options);

}  // namespace cugrade
