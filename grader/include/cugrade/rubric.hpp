// A rubric: the cases an exercise is graded on, their points, limits and speed tiers (docs/rubric.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cugrade/error.hpp"

namespace cugrade {

enum class Visibility { visible, hidden };

struct InputDistribution {
    std::string name;
    std::string kind;  // "uniform", "integers", "constant", "ascending" or "descending"
    double low = 0.0;
    double high = 1.0;
    double value = 0.0;       // constant's value
    std::string min_at;       // "", "first" or "last": one value below all others placed there
    std::string max_at;       // "", "first" or "last": one value above all others placed there
    bool infinities = false;  // one -inf and one +inf at seeded places
};

// A case's extent: {n} for vectors, {rows, cols} for matrices.
using Shape = std::vector<std::uint64_t>;
std::string format_shape(const Shape& shape);  // "n=31", "33x31"
std::uint64_t element_count(const Shape& shape);  // the product of the extents; the largest uint64 if it overflows

// The most elements a case may have: enough for any exercise that fits in a GPU's memory, few enough to catch a typo
// of several digits.
inline constexpr std::uint64_t max_elements = std::uint64_t{1} << 34;

struct Limits {
    double compile_seconds = 300.0;
    double case_seconds = 20.0;
    std::uint64_t memory_bytes = std::uint64_t{16} << 30;  // host memory of a harness process and its children
};

struct CaseGroup {
    std::string name;
    Visibility visibility = Visibility::visible;
    double points = 0.0;
    std::vector<Shape> shapes;  // from `sizes` or `shapes`
    std::vector<std::string> inputs;
    std::uint64_t seed = 0;
    double case_seconds = 0.0;
    bool race_check = false;  // run each case under compute-sanitizer racecheck
};

// One step of the speed scale. With the `ratio` metric, a time at most `bound` times the reference's earns `points`;
// with `bandwidth`, a bandwidth at least `bound` times the measured copy bandwidth does.
struct SpeedTier {
    double bound = 1.0;
    double points = 0.0;
};

enum class SpeedMetric { ratio, bandwidth };
enum class SpeedScale { stepped, linear };

struct SpeedTest {
    Shape shape;
    std::string input;
    std::uint64_t seed = 0;
    Visibility visibility = Visibility::visible;
    SpeedMetric metric = SpeedMetric::ratio;
    SpeedScale scale = SpeedScale::stepped;
    int warmup = 3;
    int min_samples = 10;
    int max_samples = 200;
    double target_rse = 0.005;  // sampling stops once both medians are known to this relative standard error
    double max_seconds = 20.0;
    double case_seconds = 0.0;
    std::vector<SpeedTier> tiers;  // best first: points falling

    double max_points() const { return tiers.empty() ? 0.0 : tiers.front().points; }
};

// A time below bytes / copy bandwidth by more than this margin is physically impossible here: an invalid measurement.
inline constexpr double physical_floor_margin = 0.10;

// What a rubric changes of what a submission may use (api_policy.hpp): `forbid` adds to what the defaults refuse,
// `allow` to what they permit; a name both lists match is refused.
struct ApiRules {
    std::vector<std::string> forbidden_libraries;  // names from known_libraries(); every known one is by default
    std::vector<std::string> allowed_libraries;
    std::vector<std::string> forbidden_functions;  // C names or globs ("cudaStream*")
    std::vector<std::string> allowed_functions;
};

struct Rubric {
    std::filesystem::path file;
    std::string exercise;
    std::size_t dimensions = 1;  // 1 when the cases give `sizes`, 2 when they give `shapes`
    Limits limits;
    int calls_per_case = 3;
    double tolerance_lambda = 8.0;
    std::map<std::string, InputDistribution> inputs;
    std::vector<CaseGroup> groups;
    std::optional<SpeedTest> speed;
    ApiRules apis;
};

// Reads and validates a rubric. Every mistake is a FileError at its place.
Rubric load_rubric(const std::filesystem::path& file);

// One case as the grader runs it: a group's size and input, or the speed test.
struct CasePlan {
    std::string id;      // "edges/n=31/integers" or "tiles/33x31/uniform", unique within the rubric
    std::string group;   // the group's name, or "speed"
    Visibility visibility = Visibility::visible;
    Shape shape;
    InputDistribution input;
    std::uint64_t seed = 0;
    double max_points = 0.0;
    double case_seconds = 0.0;
    bool timed = false;       // the speed test: correctness first, then timing against the reference
    bool race_check = false;  // run alone under compute-sanitizer racecheck: a shared-memory race fails the case
};

// The rubric's cases in the order they run: groups as written, sizes then inputs, the speed test last.
std::vector<CasePlan> plan_cases(const Rubric& rubric);

std::string to_string(Visibility visibility);

}  // namespace cugrade
