// Grades one exercise of a submission folder with cugrade's own pipeline and compares every case's verdict with an
// expected.yaml. Exit codes: 0 as expected, 1 a mismatch, 77 the build was as expected but no GPU ran the cases.
//
// expected.yaml:
//   build: ok | failed
//   status: S | [S, ...]          the status of every case no rule below matches
//   cases: [{match: GLOB, status: S | [S, ...]}, ...]   first matching rule wins; GLOB as in fnmatch
//   outcome: passed | failed      optional
//   diagnostics_contain: TEXT     optional
#include <fnmatch.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cugrade/check.hpp"

namespace {

using namespace cugrade;

std::vector<std::string> statuses(const YAML::Node& node) {
    if (node.IsSequence()) {
        return node.as<std::vector<std::string>>();
    }
    return {node.as<std::string>()};
}

std::vector<std::string> expected_statuses(const YAML::Node& expected, const std::string& id) {
    for (const auto& rule : expected["cases"]) {
        if (::fnmatch(rule["match"].as<std::string>().c_str(), id.c_str(), 0) == 0) {
            return statuses(rule["status"]);
        }
    }
    return statuses(expected["status"]);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::cerr << "usage: fixture_check COURSE_DIR SUBMISSION_DIR EXERCISE EXPECTED_YAML CACHE_DIR\n";
        return 2;
    }
    const std::string exercise_name = argv[3];
    const char* expected_file = argv[4];
    const char* cache_dir = argv[5];
    try {
        const YAML::Node expected = YAML::LoadFile(expected_file);
        CheckOptions options;
        options.submission_dir = argv[2];
        options.exercises = {exercise_name};
        options.cache_dir = cache_dir;
        options.progress = &std::cerr;
        const Report report = check(Course{argv[1]}, options);
        print_report(std::cout, report, ReportOptions{true, 140});
        // For the record of a GPU run: every fixture's full report as JSON, named after its folder.
        if (const char* dir = std::getenv("CUGRADE_FIXTURE_REPORTS"); dir != nullptr && *dir != '\0') {
            const auto name = exercise_name + "-" + std::filesystem::path(argv[2]).filename().string() + ".json";
            std::ofstream(std::filesystem::path(dir) / name) << report_to_json(report, ReportOptions{true, 140}).dump(2);
        }

        int mismatches = 0;
        const auto mismatch = [&](const std::string& what) {
            std::cout << "MISMATCH: " << what << "\n";
            ++mismatches;
        };
        if (report.exercises.size() != 1) {
            mismatch(fmt::format("graded {} exercises, expected 1", report.exercises.size()));
            return 1;
        }
        const ExerciseReport& exercise = report.exercises.front();
        if (exercise.error) {
            mismatch("cugrade failed: " + *exercise.error);
            return 1;
        }
        const bool build_ok = expected["build"].as<std::string>() == "ok";
        if (exercise.build.ok != build_ok) {
            mismatch(fmt::format("build {}, expected {}", exercise.build.ok ? "ok" : "failed",
                                 expected["build"].as<std::string>()));
        }
        if (expected["diagnostics_contain"] &&
            exercise.build.diagnostics.find(expected["diagnostics_contain"].as<std::string>()) == std::string::npos) {
            mismatch(fmt::format("the diagnostics lack '{}'", expected["diagnostics_contain"].as<std::string>()));
        }
        if (exercise.build.ok && !report.gpu.available) {
            std::cout << "the build is as expected; no GPU, so the verdicts were not checked\n";
            return mismatches > 0 ? 1 : 77;
        }
        for (const auto& c : exercise.cases) {
            const auto allowed = expected_statuses(expected, c.plan.id);
            if (std::find(allowed.begin(), allowed.end(), to_string(c.status)) == allowed.end()) {
                mismatch(fmt::format("{}: {}, expected {} ({})", c.plan.id, to_string(c.status),
                                     fmt::join(allowed, " or "), c.detail));
            }
        }
        if (expected["outcome"] && to_string(exercise.outcome()) != expected["outcome"].as<std::string>()) {
            mismatch(fmt::format("outcome {}, expected {}", to_string(exercise.outcome()),
                                 expected["outcome"].as<std::string>()));
        }
        std::cout << (mismatches == 0 ? "every verdict as expected\n" : fmt::format("{} mismatches\n", mismatches));
        return mismatches == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "fixture_check: " << e.what() << "\n";
        return 1;
    }
}
