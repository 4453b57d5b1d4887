// `cugrade bench`: for each exercise, the reference, the device-to-device copy, and the library baselines its
// exercise.yaml names, timed by the same machinery as a grading's speed test.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cugrade/exercise.hpp"
#include "cugrade/gpu.hpp"
#include "cugrade/rubric.hpp"

#pragma once

namespace cugrade {

inline constexpr int bench_schema_version = 1;

struct BenchOptions {
    std::vector<std::string> exercises;  // empty: every exercise
    std::vector<Shape> sizes;            // for vector exercises; empty: the rubric's speed test size
    std::vector<Shape> shapes;           // for matrix exercises; empty: the rubric's speed test shape
    std::optional<std::string> nvcc;
    std::filesystem::path cache_dir;
    std::uint64_t cache_max_bytes = 0;
    std::ostream* progress = nullptr;
};

struct BenchRow {
    std::string exercise;
    Shape shape;
    std::string what;  // "reference", "copy", or a baseline's name ("cub", "cublas")
    double ms = 0.0;
    double gb_per_s = 0.0;
    double copy_fraction = 0.0;
    double rse = 0.0;  // relative standard error of the median time
    int samples = 0;
    double reference_over_this = 0.0;  // a baseline's row: the reference's median time over the baseline's
    std::string error;  // why this row has no figures
};

struct BenchReport {
    GpuInfo gpu;
    std::vector<BenchRow> rows;
};

// Throws UsageError for bad usage. Without a GPU the report has no rows and its gpu says why.
BenchReport bench(const Course& course, const BenchOptions& options);
void print_bench(std::ostream& out, const BenchReport& report);
nlohmann::json bench_to_json(const BenchReport& report);

}  // namespace cugrade
