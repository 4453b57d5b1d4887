// `cugrade bench`: for each exercise, the reference, the device-to-device copy, and the library baselines its
// exercise.yaml names, timed by the same machinery as a grading's speed test. Every checker is built first, on every
// core; the speed tests then run one at a time, each row printed the moment it is measured.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <map>
#include <string>
#include <vector>

#include "course/exercise.hpp"
#include "base/gpu.hpp"
#include "course/rubric.hpp"

#pragma once

namespace cugrade {

inline constexpr int bench_schema_version = 1;

struct BenchOptions {
    std::vector<std::string> exercises;  // empty: every exercise
    std::vector<Shape> sizes;            // for vector exercises; empty: the rubric's speed test size
    std::vector<Shape> shapes;           // for matrix exercises; empty: the rubric's speed test shape
    // The speed test's parameters, for the exercises that have them (`--parameter k=1024`: matmul's inner size).
    std::map<std::string, double> parameters;
    std::optional<std::string> nvcc;
    // Where the checkers are built ahead of the timing; empty: each speed test builds its own when it comes.
    std::filesystem::path cache_dir;
    std::uint64_t cache_max_bytes = 0;
    std::ostream* table = nullptr;     // the table, printed as it is measured; null: nowhere
    std::ostream* progress = nullptr;  // a line for people waiting on the builds; null: nowhere
};

struct BenchRow {
    std::string exercise;
    Shape shape;
    std::string what;     // "reference", "copy", or a baseline's name ("cub", "cublas")
    std::string setting;  // the parameters bench was given, as "k=1024", or ""
    double ms = 0.0;
    double gb_per_s = 0.0;
    double copy_fraction = 0.0;
    double rse = 0.0;  // relative standard error of the median time
    int samples = 0;
    double reference_over_this = 0.0;  // a baseline's row: the reference's median time over the baseline's
    std::string error;                 // why this row has no figures
};

struct BenchReport {
    GpuInfo gpu;
    std::vector<BenchRow> rows;
    unsigned checkers = 0;        // checkers built: each exercise's own, and one per baseline in its reference's place
    unsigned build_jobs = 0;      // built at once
    double build_seconds = 0.0;   // all of them, cached ones included
    unsigned speed_tests = 0;     // timed, one after another
    double timing_seconds = 0.0;  // all of them
};

// Throws UsageError for bad usage, before anything is built. Without a GPU the report has no rows, its gpu says why,
// and nothing is printed.
BenchReport bench(const Course& course, const BenchOptions& options);

// The table's parts, in the order bench prints them (options.table), made safe for a terminal: the GPU (before the
// builds), how long the builds took and the column header, a row, then how long the timing took and what the columns
// mean.
std::string bench_title(const GpuInfo& gpu);
std::string bench_header(const BenchReport& report);
std::string bench_row(const BenchRow& row);
std::string bench_ending(const BenchReport& report);

nlohmann::json bench_to_json(const BenchReport& report);

}  // namespace cugrade
