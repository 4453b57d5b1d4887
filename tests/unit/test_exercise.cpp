// exercise.yaml: every shipped exercise loads, and its README sections are checked where they are named.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "catch.hpp"
#include "cugrade/error.hpp"
#include "cugrade/exercise.hpp"
#include "exercise_skeleton.hpp"
#include "file_io.hpp"
#include "name_probe.hpp"
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
        << "title: Toy\nsubmission: toy.cu\ncontract: toy.h\nentry_points: [toy]\n" << tail;
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
    CHECK(error_of("readme_sections:\n  bounds: The first block\n") ==
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
