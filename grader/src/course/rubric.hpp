// A rubric: the cases an exercise is graded on, their points, limits and speed tiers (docs/rubric.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "case_plan_json.hpp"
#include "base/error.hpp"

namespace cugrade {

enum class Visibility { visible, hidden };

// The rubric's input distributions and a case's plan are the harness's own types (exercises/common/case_plan.hpp).
using InputDistribution = plan::Distribution;
using SpeedMetric = plan::SpeedMetric;

// A case's extent: {n} for vectors, {rows, cols} for matrices.
using Shape = std::vector<std::uint64_t>;
std::string format_shape(const Shape& shape);     // "n=31", "33x31"
std::uint64_t element_count(const Shape& shape);  // the product of the extents; the largest uint64 if it overflows

// The most elements a case may have: enough for any exercise that fits in a GPU's memory, few enough to catch a typo
// of several digits.
inline constexpr std::uint64_t max_elements = std::uint64_t{1} << 34;

// A parameter's value as a rubric sets it: the number the harness gets (true and false as 1 and 0), the text as
// written and where, so that a value the exercise does not accept is refused at its place (fit_rubric).
struct ParameterValue {
    double number = 0.0;
    std::string written;                  // "true", "2.5", "1e15"
    std::optional<SourceLocation> where;  // none for an exercise's default or a value given on the command line
};
using ParameterValues = std::map<std::string, ParameterValue>;

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
    // One case per entry and shape. An entry names one distribution for every operand, or one per operand.
    std::vector<std::vector<std::string>> inputs;
    ParameterValues parameters;  // the rubric's own, overridden by the group's
    SourceLocation where;        // where the group starts in the rubric, for messages
    std::uint64_t seed = 0;
    double case_seconds = 0.0;
    bool race_check = false;    // run each case under compute-sanitizer racecheck
    bool memory_check = false;  // and each once more under compute-sanitizer memcheck
};

// One step of the speed scale. With the `ratio` metric, a time at most `bound` times the reference's earns `points`;
// with `bandwidth`, a bandwidth at least `bound` times the measured copy bandwidth does.
struct SpeedTier {
    double bound = 1.0;
    double points = 0.0;
};

enum class SpeedScale { stepped, linear };

struct SpeedTest {
    Shape shape;
    std::vector<std::string> input;  // one distribution for every operand, or one per operand
    ParameterValues parameters;
    std::uint64_t seed = 0;
    Visibility visibility = Visibility::visible;
    SpeedMetric metric = SpeedMetric::ratio;
    SpeedScale scale = SpeedScale::stepped;
    plan::Sampling sampling;
    double case_seconds = 0.0;
    SourceLocation where;
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
    ParameterValues parameters;  // `parameters:` at the top, the default of every group
    std::vector<CaseGroup> groups;
    std::optional<SpeedTest> speed;
    ApiRules apis;
};

// Reads and validates a rubric. Every mistake is a FileError at its place.
Rubric load_rubric(const std::filesystem::path& file);

// One case as the grader runs it: what the harness needs (plan::Case, sent to it as the plan) and what the grader
// keeps to itself.
struct CasePlan : plan::Case {
    std::string group;  // the group's name, or "speed"
    Visibility visibility = Visibility::visible;
    double max_points = 0.0;
    double case_seconds = 0.0;
    bool race_check = false;  // run alone under compute-sanitizer racecheck: a shared-memory race fails the case
    // Run once more under compute-sanitizer memcheck: an access outside every allocation fails the case, even when
    // its result came out right.
    bool memory_check = false;
};

// The rubric's cases in the order they run: groups as written, sizes then inputs, the speed test last. Their seeds
// are the rubric's, the same in every grading.
std::vector<CasePlan> plan_cases(const Rubric& rubric);

// A secret for one grading of one submission, from the operating system's random source; never 0.
std::uint64_t draw_grading_secret();

// Mixes `secret` into the seeds of the hidden and timed cases, so that no one who knows the rubric's seeds knows
// their inputs (docs/security.md); visible cases keep the seeds a student reproduces them with. A secret of 0
// changes nothing.
void hide_seeds(std::vector<CasePlan>& cases, std::uint64_t secret);

// How an exercise declares one of its parameters (exercise.yaml's `parameters:`, docs/authoring.md): its type, its
// default, and the values its harness accepts. A float32 is finite in float32 and, unless 0, normal.
enum class ParameterType { integer, float32, boolean };

struct ParameterRule {
    ParameterType type = ParameterType::integer;
    double default_value = 0.0;  // true and false as 1 and 0
    std::optional<double> min;   // integer and float32 only
    std::optional<double> max;
    std::string greater_than;  // another parameter of the exercise whose value this one must exceed, or ""
    std::string reason;        // why the range is what it is: told with a refusal
};

// What an exercise lets its rubric choose (exercise.yaml): its operands and its parameters' declarations.
struct RubricChoices {
    std::vector<std::string> operands = {"input"};
    std::map<std::string, ParameterRule> parameters;
};

// Checks that the rubric's inputs fit the exercise's operands and that it sets only the exercise's parameters, each
// to a value its declaration accepts, and fills in the parameters' defaults. Throws FileError at the group (or the
// speed test) that does not fit, or at the value refused.
void fit_rubric(Rubric& rubric, const RubricChoices& choices);

// "integers" or "signed+positive": how a case's id names its inputs.
std::string input_label(const std::vector<std::string>& names);

std::string to_string(Visibility visibility);

}  // namespace cugrade
