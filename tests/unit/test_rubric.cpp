// Rubric parsing: the shipped rubric loads, and each kind of mistake is reported at its place, verbatim.
#include <filesystem>
#include <fstream>
#include <set>

#include "catch.hpp"
#include "course/exercise.hpp"
#include "course/rubric.hpp"
#include "score/score.hpp"
#include "base/file_io.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

const std::string valid_start = R"(schema: 1
exercise: sum
inputs:
  positive: {kind: uniform, low: 0, high: 1}
)";

const std::string valid_group = R"(groups:
  - {name: edges, points: 10, sizes: [1, 2], inputs: [positive], seed: 1}
)";

// Loads `text` as rubric.yaml and returns the error message, with the temporary folder taken out of it.
std::string error_of(const std::string& text) {
    const fs::path dir = fs::temp_directory_path() / "cugrade-test-rubric";
    fs::create_directories(dir);
    std::ofstream(dir / "rubric.yaml") << text;
    try {
        load_rubric(dir / "rubric.yaml");
    } catch (const FileError& e) {
        std::string message = e.what();
        return message.substr((dir.string() + "/").size());
    } catch (const UsageError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("the shipped sum rubric loads and plans its cases") {
    const Rubric rubric = load_rubric(fs::path(CUGRADE_SOURCE_DIR) / "rubrics" / "sum.yaml");
    CHECK(rubric.exercise == "sum");
    CHECK(rubric.calls_per_case == 3);
    REQUIRE(rubric.speed);
    const auto cases = plan_cases(rubric);
    CHECK(cases.size() == 37);
    CHECK(cases.front().id == "edges/n=0/integers");
    CHECK(cases.back().id == "speed/n=268435456/positive");
    CHECK(cases.back().timed);
    CHECK(cases[cases.size() - 3].id == "races/n=1025/integers");
    CHECK(cases[cases.size() - 3].race_check);
    double points = 0.0;
    std::set<std::string> ids;
    std::set<std::uint64_t> seeds;
    for (const auto& c : cases) {
        points += c.max_points;
        ids.insert(c.id);
        seeds.insert(c.inputs.front().seed);
    }
    CHECK(points == Approx(100.0));
    CHECK(ids.size() == cases.size());
    CHECK(seeds.size() == cases.size());
}

TEST_CASE("a valid minimal rubric loads with defaults") {
    const std::string file = valid_start + valid_group;
    CHECK(error_of(file) == "no error");
}

TEST_CASE("rubric mistakes are reported at their place") {
    CHECK(error_of(valid_start) == "rubric.yaml:1:1: the rubric is missing the required key 'groups'");
    CHECK(error_of(valid_start + valid_group + "calls_per_case: 0\n") ==
          "rubric.yaml:7:17: 'calls_per_case' must be a whole number from 1 to 100, got '0'");
    CHECK(error_of(valid_start + "groups:\n  - {name: edges, pionts: 10, sizes: [1], inputs: [positive], seed: 1}\n") ==
          "rubric.yaml:6:19: unknown key 'pionts' in a group (did you mean 'points'?)");
    CHECK(error_of(valid_start + "groups:\n  - {name: edges, points: 10, sizes: [1], inputs: [uniform], seed: 1}\n") ==
          "rubric.yaml:6:52: unknown input 'uniform' (defined in 'inputs': positive)");
    CHECK(
        error_of(valid_start + "groups:\n  - {name: edges, points: ten, sizes: [1], inputs: [positive], seed: 1}\n") ==
        "rubric.yaml:6:27: 'points' must be a number from 0 to 1000000, got 'ten'");
    CHECK(error_of(valid_start + "groups:\n  - {name: edges, points: 1, sizes: [], inputs: [positive], seed: 1}\n") ==
          "rubric.yaml:6:37: 'sizes' must be a non-empty list, got a list");
    CHECK(error_of(valid_start + "groups:\n  - {name: edges, points: 1, sizes: [-1], inputs: [positive], seed: 1}\n") ==
          "rubric.yaml:6:38: 'sizes' must be a whole number from 0 to 17179869184, got '-1'");
    CHECK(error_of(valid_start + "groups:\n  - {name: Edges, points: 1, sizes: [1], inputs: [positive], seed: 1}\n") ==
          "rubric.yaml:6:12: 'name' must use lowercase letters, digits, '-' and '_', got 'Edges'");
    CHECK(error_of(valid_start + valid_group + valid_group.substr(8)) ==
          "rubric.yaml:7:12: group name 'edges' is used twice");
    CHECK(
        error_of(valid_start +
                 "groups:\n  - {name: a, visibility: secret, points: 1, sizes: [1], inputs: [positive], seed: 1}\n") ==
        "rubric.yaml:6:27: 'visibility' must be one of visible, hidden, got 'secret'");
    CHECK(error_of("schema: 2\nexercise: sum\n") ==
          "rubric.yaml:1:9: unsupported rubric schema 2; this cugrade reads schema 1");
    CHECK(error_of("- a\n- b\n") == "rubric.yaml:1:1: the rubric must be a mapping of keys to values, got a list");
}

TEST_CASE("input distributions are checked") {
    CHECK(error_of("schema: 1\nexercise: sum\ninputs:\n  p: {kind: normal, low: 0, high: 1}\n") ==
          "rubric.yaml:4:13: 'kind' must be one of uniform, integers, constant, ascending, descending, got 'normal'");
    CHECK(error_of("schema: 1\nexercise: sum\ninputs:\n  p: {kind: uniform, low: 1, high: 1}\n") ==
          "rubric.yaml:4:36: 'high' must be greater than 'low' (1)");
    CHECK(error_of("schema: 1\nexercise: sum\ninputs:\n  p: {kind: uniform, low: 1, high: 1.00000001}\n") ==
          "rubric.yaml:4:36: 'high' must be greater than 'low' (1), not 1.00000001, the same float32");
    CHECK(error_of("schema: 1\nexercise: sum\ninputs:\n  p: {kind: uniform, low: -1e31, high: 1}\n") ==
          "rubric.yaml:4:27: 'low' must be a number from -1e+30 to 1e+30, got '-1e31'");
    CHECK(error_of("schema: 1\nexercise: sum\ninputs:\n  p: {kind: integers, low: 0.5, high: 2}\n") ==
          "rubric.yaml:4:28: 'low' and 'high' of an integers input must be whole numbers");
}

TEST_CASE("matrix exercises give shapes, and every group gives the same kind of extent") {
    const std::string shapes =
        "groups:\n  - {name: tiles, points: 1, shapes: [[31, 33], [1, 1025]], inputs: [positive], seed: 1}\n";
    CHECK(error_of(valid_start + shapes) == "no error");
    CHECK(error_of(valid_start + "groups:\n  - {name: t, points: 1, shapes: [[31]], inputs: [positive], seed: 1}\n") ==
          "rubric.yaml:6:35: each of 'shapes' must be [rows, cols]");
    CHECK(error_of(valid_start + "groups:\n  - {name: t, points: 1, inputs: [positive], seed: 1}\n") ==
          "rubric.yaml:6:5: give either 'sizes' or 'shapes'");
    CHECK(error_of(valid_start + shapes + valid_group.substr(8)) ==
          "rubric.yaml:7:5: every group must give 'sizes', or every group 'shapes'");
}

TEST_CASE("planted extremes and infinities are part of an input") {
    const std::string file = "schema: 1\nexercise: minmax\ninputs:\n"
                             "  p: {kind: uniform, low: 0, high: 1, min_at: first, max_at: last, infinities: true}\n"
                             "  c: {kind: constant, value: 2.5}\n"
                             "groups:\n  - {name: edges, points: 10, sizes: [1, 2], inputs: [p, c], seed: 1}\n";
    CHECK(error_of(file) == "no error");
    CHECK(error_of("schema: 1\nexercise: sum\ninputs:\n  p: {kind: uniform, low: 0, high: 1, min_at: middle}\n") ==
          "rubric.yaml:4:47: 'min_at' must be one of first, last, got 'middle'");
}

TEST_CASE("the speed test's sampling and metric are checked") {
    const std::string speed = "speed:\n  size: 100\n  input: positive\n  seed: 1\n";
    CHECK(error_of(valid_start + valid_group + speed +
                   "  metric: bandwidth\n  tiers:\n    - {min_fraction: 0.8, points: 10}\n"
                   "    - {min_fraction: 0.5, points: 5}\n") == "no error");
    CHECK(error_of(valid_start + valid_group + speed +
                   "  metric: bandwidth\n  tiers:\n    - {max_ratio: 2, points: 10}\n") ==
          "rubric.yaml:13:8: unknown key 'max_ratio' in a speed tier");
    CHECK(error_of(valid_start + valid_group + speed +
                   "  metric: bandwidth\n  tiers:\n    - {min_fraction: 0.5, points: 10}\n"
                   "    - {min_fraction: 0.8, points: 5}\n") ==
          "rubric.yaml:14:22: tiers must be ordered by 'min_fraction', decreasing: 0.8 follows 0.5");
    CHECK(
        error_of(valid_start + valid_group + speed + "  target_rse: 0\n  tiers:\n    - {max_ratio: 2, points: 10}\n") ==
        "rubric.yaml:11:15: 'target_rse' must be a number from 0.0001 to 0.5, got '0'");
    CHECK(error_of(valid_start + valid_group + speed + "  samples: 20\n  tiers:\n    - {max_ratio: 2, points: 10}\n") ==
          "rubric.yaml:11:3: unknown key 'samples' in 'speed'");
}

TEST_CASE("speed tiers must get slower and cheaper") {
    const std::string speed = "speed:\n  size: 100\n  input: positive\n  seed: 1\n  tiers:\n"
                              "    - {max_ratio: 2, points: 10}\n";
    CHECK(error_of(valid_start + valid_group + speed) == "no error");
    CHECK(error_of(valid_start + valid_group + speed + "    - {max_ratio: 1.5, points: 5}\n") ==
          "rubric.yaml:13:19: tiers must be ordered by 'max_ratio', increasing: 1.5 follows 2");
    CHECK(error_of(valid_start + valid_group + speed + "    - {max_ratio: 3, points: 10}\n") ==
          "rubric.yaml:13:30: a slower tier must earn fewer points: 10 follows 10");
}

TEST_CASE("broken yaml and missing files are reported, not crashed on") {
    CHECK_THAT(error_of("schema: [1\n"), Catch::Matchers::StartsWith("rubric.yaml:2:1: invalid yaml: "));
    try {
        load_rubric("no/such/rubric.yaml");
        FAIL("no error");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == "cannot read 'no/such/rubric.yaml': no such file");
    }
}

TEST_CASE("a key written twice is an error at the second, wherever it is") {
    CHECK(error_of(valid_start + valid_group + "calls_per_case: 2\ncalls_per_case: 3\n") ==
          "rubric.yaml:8:1: key 'calls_per_case' appears twice in this mapping (first at line 7): keep one");
    CHECK(error_of(valid_start +
                   "groups:\n  - {name: g, points: 1, points: 2, sizes: [1], inputs: [positive], seed: 1}\n") ==
          "rubric.yaml:6:26: key 'points' appears twice in this mapping (first at line 6): keep one");
}

TEST_CASE("shapes whose element count would wrap around are refused") {
    CHECK(error_of(
              valid_start +
              "groups:\n  - {name: t, points: 1, shapes: [[4294967296, 4294967296]], inputs: [positive], seed: 1}\n") ==
          "rubric.yaml:6:35: 'shapes': 4294967296 x 4294967296 elements is more than 17179869184");
    CHECK(error_of(valid_start +
                   "groups:\n  - {name: t, points: 1, shapes: [[131072, 262144]], inputs: [positive], seed: 1}\n") ==
          "rubric.yaml:6:35: 'shapes': 131072 x 262144 elements is more than 17179869184");
    CHECK(element_count({std::uint64_t{1} << 40, std::uint64_t{1} << 40}) == UINT64_MAX);
}

TEST_CASE("a group's points total exactly what the rubric says") {
    const std::filesystem::path dir = fs::temp_directory_path() / "cugrade-test-rubric";
    fs::create_directories(dir);
    std::ofstream(dir / "thirds.yaml")
        << valid_start
        << "groups:\n  - {name: g, points: 10, sizes: [1, 2, 3], inputs: [positive], seed: 1}\n"
           "  - {name: h, points: 90, sizes: [1, 2, 3, 5, 7, 11, 13], inputs: [positive], seed: 2}\n";
    const auto cases = plan_cases(load_rubric(dir / "thirds.yaml"));
    std::vector<double> shares;
    for (const auto& c : cases) {
        shares.push_back(c.max_points);
    }
    double naive = 0.0;
    for (const double share : shares) {
        naive += share;
    }
    CHECK(naive != 100.0);  // what a plain sum gives
    CHECK(round_points(naive) == 100.0);
}

namespace {

// Loads `text` as rubric.yaml, fits it to `choices`, and returns the error message without the temporary folder.
std::string fit_error_of(const std::string& text, const RubricChoices& choices) {
    const fs::path dir = fs::temp_directory_path() / "cugrade-test-rubric";
    fs::create_directories(dir);
    std::ofstream(dir / "fit.yaml") << text;
    try {
        Rubric rubric = load_rubric(dir / "fit.yaml");
        fit_rubric(rubric, choices);
    } catch (const UsageError& e) {
        const std::string message = e.what();
        return message.rfind(dir.string() + "/", 0) == 0 ? message.substr(dir.string().size() + 1) : message;
    }
    return "no error";
}

const RubricChoices two_operands{{"a", "b"}, {}};
const RubricChoices scan_like{{"input"}, {{"exclusive", {ParameterType::boolean, 0.0}}}};

}  // namespace

TEST_CASE("a case of several operands names one input for all or one for each, and its id says which") {
    const std::string rubric = valid_start + "  signed: {kind: uniform, low: -1, high: 1}\n" +
                               "groups:\n  - {name: g, points: 2, sizes: [5], inputs: [positive, [positive, signed]], "
                               "seed: 1}\n";
    CHECK(fit_error_of(rubric, two_operands) == "no error");
    const fs::path dir = fs::temp_directory_path() / "cugrade-test-rubric";
    Rubric loaded = load_rubric(dir / "fit.yaml");
    fit_rubric(loaded, two_operands);
    const auto cases = plan_cases(loaded);
    REQUIRE(cases.size() == 2);
    CHECK(cases[0].id == "g/n=5/positive");
    REQUIRE(cases[0].inputs.size() == 1);
    CHECK(cases[1].id == "g/n=5/positive+signed");
    REQUIRE(cases[1].inputs.size() == 2);
    CHECK(cases[1].inputs[0].distribution.name == "positive");
    CHECK(cases[1].inputs[1].distribution.name == "signed");
    CHECK(cases[1].inputs[0].seed != cases[1].inputs[1].seed);

    CHECK(fit_error_of(valid_start + "  signed: {kind: uniform, low: -1, high: 1}\n" +
                           "groups:\n  - {name: g, points: 2, sizes: [5], inputs: [[positive, signed, positive]], "
                           "seed: 1}\n",
                       two_operands) ==
          "fit.yaml:7:5: group 'g': [positive, signed, positive] names 3 inputs, but sum takes 2 (a, b): name one "
          "input for all, or one for each");
    CHECK(error_of(valid_start + "groups:\n  - {name: g, points: 2, sizes: [5], inputs: [[]], seed: 1}\n") ==
          "rubric.yaml:6:47: 'inputs' must be a non-empty list, got a list");
}

TEST_CASE("parameters: the rubric's, a group's own, the exercise's defaults, and names the exercise lacks") {
    const std::string rubric = valid_start + "parameters: {exclusive: false}\n" +
                               "groups:\n  - {name: a, points: 1, sizes: [5], inputs: [positive], seed: 1}\n"
                               "  - {name: b, points: 1, sizes: [5], inputs: [positive], seed: 1, "
                               "parameters: {exclusive: true}}\n";
    CHECK(fit_error_of(rubric, scan_like) == "no error");
    const fs::path dir = fs::temp_directory_path() / "cugrade-test-rubric";
    Rubric loaded = load_rubric(dir / "fit.yaml");
    fit_rubric(loaded, scan_like);
    const auto cases = plan_cases(loaded);
    REQUIRE(cases.size() == 2);
    CHECK(cases[0].parameter("exclusive") == 0.0);
    CHECK(cases[1].parameter("exclusive") == 1.0);

    Rubric defaults = load_rubric(dir / "fit.yaml");
    defaults.parameters.clear();
    defaults.groups[0].parameters.clear();
    fit_rubric(defaults, {{"input"}, {{"exclusive", {ParameterType::boolean, 1.0}}}});
    CHECK(plan_cases(defaults)[0].parameter("exclusive") == 1.0);

    CHECK(fit_error_of(rubric, {{"input"}, {{"tile", {ParameterType::integer, 32.0}}}}) ==
          "fit.yaml:7:5: group 'a': sum has no parameter 'exclusive' (it has: tile)");
    CHECK(fit_error_of(rubric, {}) ==
          "fit.yaml:7:5: group 'a': sum has no parameters, so 'parameters' cannot set 'exclusive'");
    CHECK(error_of(valid_start + "parameters: {exclusive: maybe}\n" + valid_group) ==
          "rubric.yaml:5:25: parameter 'exclusive' must be a number, true or false, got 'maybe'");
}

namespace {

// The shipped rubrics/EXERCISE.yaml with `from` replaced by `to`, loaded with the shipped exercise: the error message
// with the temporary folder taken out, so it reads as the real file's would ("histogram.yaml:13:8: ...").
std::string shipped_error_of(const std::string& exercise, const std::string& from, const std::string& to) {
    const fs::path source = CUGRADE_SOURCE_DIR;
    std::string text = read_file(source / "rubrics" / (exercise + ".yaml"));
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    const fs::path dir = fs::temp_directory_path() / "cugrade-test-rubric" / "shipped";
    fs::create_directories(dir);
    std::ofstream(dir / (exercise + ".yaml")) << text;
    try {
        load_exercise_rubric(load_exercise(Course{source}, exercise), dir / (exercise + ".yaml"));
    } catch (const FileError& e) {
        return std::string(e.what()).substr(dir.string().size() + 1);
    }
    return "no error";
}

}  // namespace

TEST_CASE("every shipped rubric loads with its exercise's parameter declarations") {
    const Course course{CUGRADE_SOURCE_DIR};
    for (const auto& name : course.exercise_names()) {
        INFO(name);
        CHECK_NOTHROW(load_exercise_rubric(load_exercise(course, name), course.rubric_for(name)));
    }
    const Exercise histogram = load_exercise(course, "histogram");
    const ParameterRule& bins = histogram.choices.parameters.at("bins");
    CHECK(bins.type == ParameterType::integer);
    CHECK(bins.default_value == 256.0);
    CHECK(*bins.min == 1.0);
    CHECK(*bins.max == 4096.0);
    CHECK(histogram.choices.parameters.at("high").greater_than == "low");
    CHECK(load_exercise(course, "scan").choices.parameters.at("exclusive").type == ParameterType::boolean);
}

TEST_CASE("a value the exercise's declaration refuses is an error at its place, before anything is built") {
    CHECK(shipped_error_of("histogram", "  low: 0\n", "  low: -1e39\n") ==
          "histogram.yaml:13:8: 'low' is -1e39, outside float32's finite range (about -3.4e38 to 3.4e38)");
    CHECK(shipped_error_of("histogram", "  low: 0\n", "  low: 1e-40\n") ==
          "histogram.yaml:13:8: 'low' is 1e-40, nearer 0 than float32's smallest normal number (about 1.2e-38): give "
          "0 or a larger magnitude");
    CHECK(shipped_error_of("histogram", "  low: 0\n", "  low: true\n") ==
          "histogram.yaml:13:8: 'low' must be a float32 number, not true");
    CHECK(shipped_error_of("histogram", "{bins: 4096,", "{bins: 5000,") ==
          "histogram.yaml:53:24: 'bins' must be an integer from 1 to 4096, not 5000 (HISTOGRAM_MAX_BINS: one copy of "
          "the counts fits a block's shared memory)");
    CHECK(shipped_error_of("histogram", "  bins: 256\n", "  bins: 0\n") ==
          "histogram.yaml:12:9: 'bins' must be an integer from 1 to 4096, not 0 (HISTOGRAM_MAX_BINS: one copy of the "
          "counts fits a block's shared memory)");
    CHECK(shipped_error_of("histogram", "  bins: 256\n", "  bins: 25.5\n") ==
          "histogram.yaml:12:9: 'bins' must be an integer from 1 to 4096, not 25.5 (HISTOGRAM_MAX_BINS: one copy of "
          "the counts fits a block's shared memory)");
    CHECK(shipped_error_of("matmul", "parameters: {k: 1}", "parameters: {k: true}") ==
          "matmul.yaml:25:21: 'k' must be an integer from 1 to 65536, not true (a and b, m x k and k x n floats, must "
          "fit in the GPU's memory)");
    CHECK(shipped_error_of("matmul", "  parameters: {k: 4096}\n  seed: 8", "  parameters: {k: 1e15}\n  seed: 8") ==
          "matmul.yaml:77:19: 'k' must be an integer from 1 to 65536, not 1e15 (a and b, m x k and k x n floats, "
          "must fit in the GPU's memory)");
    CHECK(shipped_error_of("matmul", "parameters: {k: 33}", "parameters: {k: -33}") ==
          "matmul.yaml:32:21: 'k' must be an integer from 1 to 65536, not -33 (a and b, m x k and k x n floats, must "
          "fit in the GPU's memory)");
    CHECK(shipped_error_of("scan", "parameters: {exclusive: true}", "parameters: {exclusive: 1}") ==
          "scan.yaml:35:29: 'exclusive' must be true or false, not 1");
}

TEST_CASE("a value the rubric sets but no group uses is checked too") {
    CHECK(shipped_error_of("scan", "  exclusive: false", "  exclusive: 0") ==
          "scan.yaml:20:14: 'exclusive' must be true or false, not 0");
}

TEST_CASE("a relation between two parameters is kept in every group, and pointed at where it breaks") {
    CHECK(shipped_error_of("histogram", "{bins: 1, low: 0, high: 1}", "{bins: 1, low: 1, high: 1}") ==
          "histogram.yaml:39:41: group 'one-bin-range': 'high' must be greater than 'low' (1), not 1");
    CHECK(shipped_error_of("histogram", "{bins: 1, low: 0, high: 1}", "{bins: 1, low: 1, high: 1.00000001}") ==
          "histogram.yaml:39:41: group 'one-bin-range': 'high' must be greater than 'low' (1), not 1.00000001, the "
          "same float32");
    // The group's own low against the rubric's high: the error is at the group's value.
    CHECK(shipped_error_of("histogram", "{bins: 7, low: 0, high: 7}", "{bins: 7, low: 300}") ==
          "histogram.yaml:46:32: group 'seven-bins': 'high' must be greater than 'low' (300), not 256");
    CHECK(shipped_error_of("histogram", "  high: 256\n", "  high: -1\n") ==
          "histogram.yaml:14:9: group 'edges': 'high' must be greater than 'low' (0), not -1");
    // Each bound is finite, but the range's width is not: every bin would be infinitely wide.
    CHECK(shipped_error_of("histogram", "{bins: 1, low: 0, high: 1}", "{bins: 1, low: -3e38, high: 3e38}") ==
          "histogram.yaml:39:45: group 'one-bin-range': 'high' - 'low' is 3e38 - -3e38, beyond float32's finite range "
          "(about 3.4e38): narrow the range");
}

TEST_CASE("a case plan reaches the harness as it left the grader") {
    const std::string rubric = valid_start + valid_group +
                               "speed: {size: 64, input: positive, seed: 9, tiers: [{max_ratio: 1.5, points: 3}]}\n";
    const fs::path dir = fs::temp_directory_path() / "cugrade-test-rubric";
    fs::create_directories(dir);
    std::ofstream(dir / "plan.yaml") << rubric;
    const auto cases = plan_cases(load_rubric(dir / "plan.yaml"));
    const CasePlan& speed = cases.back();
    REQUIRE(speed.timed);
    const plan::Case sent = speed;
    const auto received = nlohmann::json(sent).get<plan::Case>();
    CHECK(nlohmann::json(received) == nlohmann::json(sent));
    CHECK(received.size() == 64);
    CHECK(received.timing.boundaries == std::vector<double>{1.5});
    CHECK(received.timing.metric == plan::SpeedMetric::ratio);
    CHECK(received.inputs.at(0).seed == 9);
}
