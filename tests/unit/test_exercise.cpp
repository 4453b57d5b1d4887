// exercise.yaml: every shipped exercise loads, and its README sections are checked where they are named.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "catch.hpp"
#include "course/api_policy.hpp"
#include "base/error.hpp"
#include "course/exercise.hpp"
#include "authoring/exercise_skeleton.hpp"
#include "base/file_io.hpp"
#include "authoring/name_probe.hpp"
#include "fresh_folder.hpp"

using namespace cugrade;
namespace fs = std::filesystem;

namespace {

// A course of one exercise, "toy", whose exercise.yaml ends with `tail`; the error message, its folder taken out.
std::string error_of(const std::string& tail) {
    const fs::path root = fresh_folder("exercise", "course");
    fs::create_directories(root / "exercises" / "toy");
    fs::create_directories(root / "reference");
    std::ofstream(root / "exercises" / "toy" / "exercise.yaml")
        << "title: Toy\nsubmission: toy.cu\ncontract: toy.h\nentry_points: [toy]\n"
        << tail;
    std::ofstream(root / "exercises" / "toy" / "README.md") << "# Toy\n\n## Bounds\n\n### The last block\n";
    for (const char* file : {"exercises/toy/toy.h", "exercises/toy/harness.cu", "reference/toy.cu"}) {
        std::ofstream(root / file) << "\n";
    }
    try {
        load_exercise(Course{root}, "toy");
    } catch (const FileError& e) {
        const std::string message = e.what();
        const std::string folder = (root / "exercises" / "toy").string() + "/";
        return message.rfind(folder, 0) == 0 ? message.substr(folder.size()) : message;
    }
    return "no error";
}

}  // namespace

TEST_CASE("every shipped exercise loads, and its hints point at sections of its README") {
    const Course course{CUGRADE_SOURCE_DIR};
    for (const auto& name : course.exercise_names()) {
        const Exercise exercise = load_exercise(course, name);
        CHECK_FALSE(exercise.readme_sections.empty());
    }
    const Exercise matadd = load_exercise(course, "matadd");
    CHECK(readme_pointer(matadd, "bounds") == "see \"The bounds check\" in exercises/matadd/README.md");
    CHECK(readme_pointer(matadd, "atomics").empty());
    CHECK(readme_pointer(load_exercise(course, "dot"), "barrier") ==
          "see \"A missing `__syncthreads()`\" in exercises/dot/README.md");
}

TEST_CASE("readme_sections names known topics and sections the README has, at their place") {
    CHECK(error_of("readme_sections:\n  bounds: The last block\n") == "no error");
    CHECK(error_of("readme_sections:\n  bounds: Bounds\n") == "no error");
    CHECK(error_of("readme_sections:\n  edges: The last block\n") ==
          "exercise.yaml:6:3: unknown diagnosis topic 'edges' (known: state, bounds, grid, combine, indexing, inputs, "
          "parameter, shared_memory, alignment, scratch, barrier, atomics, coalescing, bank_conflicts, divergence, "
          "occupancy, vector_loads, traffic, launches)");
    CHECK(
        error_of("readme_sections:\n  bounds: The first block\n") ==
        "exercise.yaml:6:11: no section 'The first block' in " +
            (fresh_folder("exercise", "unused").parent_path() / "course" / "exercises" / "toy" / "README.md").string());
    CHECK(error_of("readme_sections: [bounds]\n") ==
          "exercise.yaml:5:18: 'readme_sections' maps a diagnosis topic to the title of a section of README.md");
}

TEST_CASE("cugrade new's name probe includes every header the course's shared code and the skeleton include") {
    // Libraries whose names live in namespaces of their own, or carry capitals (cuptiGetVersion, nvtxRangePushA).
    const std::vector<std::string> namespaced = {"cub/", "boost/", "nlohmann/", "nvtx3/", "cupti"};
    const std::regex include(R"(^\s*#\s*include\s*<([^>]+)>)");
    std::vector<std::string> texts;
    for (const auto& entry : fs::recursive_directory_iterator(CUGRADE_SOURCE_DIR "/exercises/common")) {
        if (entry.is_regular_file()) {
            texts.push_back(read_file(entry.path()));
        }
    }
    for (const auto& file : exercise_skeleton()) {
        texts.push_back(file.text);
    }
    const std::vector<std::string>& probed = probe_headers();
    for (const auto& text : texts) {
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            std::smatch match;
            if (!std::regex_search(line, match, include)) {
                continue;
            }
            const std::string header = match[1];
            const bool skipped = std::any_of(namespaced.begin(), namespaced.end(),
                                             [&](const std::string& prefix) { return header.starts_with(prefix); });
            INFO(header);
            CHECK((skipped || std::find(probed.begin(), probed.end(), header) != probed.end()));
        }
    }
}

TEST_CASE("parameters are declared with a type, a default and a range, and the default is checked against them") {
    CHECK(error_of("parameters:\n  bins: {type: integer, default: 256, min: 1, max: 4096}\n"
                   "  low: {type: float32, default: 0}\n  high: {type: float32, default: 256, greater_than: low}\n"
                   "  exclusive: {type: boolean, default: false}\n") == "no error");
    CHECK(error_of("parameters:\n  bins: 256\n") ==
          "exercise.yaml:6:9: parameter 'bins' must be declared as {type: integer | float32 | boolean, default: "
          "VALUE}, not 256");
    CHECK(error_of("parameters: [bins]\n") ==
          "exercise.yaml:5:13: 'parameters' maps each parameter a rubric may set to its declaration, {type: integer | "
          "float32 | boolean, default: VALUE}");
    CHECK(error_of("parameters:\n  bins: {type: int, default: 256}\n") ==
          "exercise.yaml:6:16: 'type' must be one of integer, float32, boolean, got 'int'");
    CHECK(error_of("parameters:\n  bins: {default: 256}\n") ==
          "exercise.yaml:6:9: parameter 'bins' is missing the required key 'type'");
    CHECK(error_of("parameters:\n  bins: {type: integer, default: 256, mx: 4096}\n") ==
          "exercise.yaml:6:39: unknown key 'mx' in parameter 'bins' (did you mean 'max'?)");
    CHECK(error_of("parameters:\n  bins: {type: integer, default: 0, min: 1, max: 4096}\n") ==
          "exercise.yaml:6:34: 'bins' must be an integer from 1 to 4096, not 0");
    CHECK(error_of("parameters:\n  k: {type: integer, default: 0, min: 1, reason: \"k is a length\"}\n") ==
          "exercise.yaml:6:31: 'k' must be an integer of at least 1, not 0 (k is a length)");
    CHECK(error_of("parameters:\n  bins: {type: integer, default: 2, min: 1.5}\n") ==
          "exercise.yaml:6:42: 'min' must be an integer, not 1.5");
    CHECK(error_of("parameters:\n  bins: {type: integer, default: 2, min: 5, max: 3}\n") ==
          "exercise.yaml:6:50: 'max' must be at least 'min' (5), not 3");
    CHECK(error_of("parameters:\n  low: {type: float32, default: 1e39}\n") ==
          "exercise.yaml:6:33: 'low' is 1e39, outside float32's finite range (about -3.4e38 to 3.4e38)");
    CHECK(error_of("parameters:\n  exclusive: {type: boolean, default: 0}\n") ==
          "exercise.yaml:6:39: 'exclusive' must be true or false, not 0");
    CHECK(error_of("parameters:\n  exclusive: {type: boolean, default: false, max: 1}\n") ==
          "exercise.yaml:6:51: 'max' is for integer and float32 parameters; 'exclusive' is a boolean");
}

TEST_CASE("a relation names another parameter of numbers, and the defaults keep to it") {
    CHECK(error_of("parameters:\n  low: {type: float32, default: 0}\n"
                   "  high: {type: float32, default: 256, greater_than: lo}\n") ==
          "exercise.yaml:7:53: 'greater_than' must name another parameter of this exercise, not 'lo' (the others: "
          "low)");
    CHECK(error_of("parameters:\n  flag: {type: boolean, default: false}\n"
                   "  high: {type: float32, default: 256, greater_than: flag}\n") ==
          "exercise.yaml:7:53: 'greater_than' compares numbers; 'flag' is a boolean");
    CHECK(error_of("parameters:\n  low: {type: float32, default: 300}\n"
                   "  high: {type: float32, default: 256, greater_than: low}\n") ==
          "exercise.yaml:7:34: 'high' must be greater than 'low' (300), not 256");
}

TEST_CASE("the parameters that cugrade new's exercise.yaml shows, uncommented, are declared as loading wants") {
    std::string shown;
    for (const auto& file : exercise_skeleton()) {
        if (file.path.find("exercise.yaml") == std::string::npos) {
            continue;
        }
        std::istringstream lines(file.text);
        bool inside = false;
        for (std::string line; std::getline(lines, line);) {
            inside = line == "# parameters:" || (inside && line.rfind("#   ", 0) == 0);
            if (inside) {
                shown += line.substr(2) + "\n";
            }
        }
    }
    REQUIRE(shown.rfind("parameters:\n", 0) == 0);
    CHECK(error_of(shown) == "no error");
}

TEST_CASE("rules name known arithmetic and libraries, each with the contract's words, at their place") {
    const std::string rules = "rules:\n"
                              "  arithmetic: {refuse: [fp64, packed_half], words: float32 only}\n"
                              "  libraries: {allow: [cub], words: no libraries}\n"
                              "  host_copies: {refuse: true, words: copy to the host}\n";
    CHECK(error_of(rules) == "no error");
    CHECK(error_of("rules:\n  arithmetic: {refuse: [fp32], words: x}\n") ==
          "exercise.yaml:6:25: unknown arithmetic 'fp32' (known: fp64, float_mma, integer_mma, packed_half)");
    CHECK(error_of("rules:\n  arithmetic: {refuse: [fp64]}\n") ==
          "exercise.yaml:6:15: the arithmetic rule is missing the required key 'words'");
    CHECK(error_of("rules:\n  libraries: {allow: [lapack], words: x}\n") ==
          "exercise.yaml:6:23: unknown library 'lapack' (known: " +
              fmt::format("{}", fmt::join(known_libraries(), ", ")) + ")");
    CHECK(error_of("rules:\n  host_copies: {refuse: maybe, words: x}\n") ==
          "exercise.yaml:6:25: 'refuse' must be one of true, false, got 'maybe'");
    CHECK(error_of("rules: [fp64]\n") ==
          "exercise.yaml:5:8: 'rules' maps arithmetic, libraries and host_copies to what the contract says of each");

    const Course course{CUGRADE_SOURCE_DIR};
    const Exercise accurate = load_exercise(course, "sum_accurate");
    CHECK(accurate.rules.refused_arithmetic.count(ArithmeticClass::fp64) == 1);
    CHECK(accurate.rules.arithmetic_words == "Sum in float32: no double-precision arithmetic");
    CHECK(accurate.rules.host_copies_refused);
    CHECK(describe_arithmetic(ArithmeticClass::fp64) == "double-precision arithmetic");
}
