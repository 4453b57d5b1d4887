// Grades one exercise of a submission folder with cugrade's own pipeline and compares every case's verdict with an
// expected.yaml. Exit codes: 0 as expected, 1 a mismatch, 77 the build was as expected but no GPU ran the cases.
//
// expected.yaml:
//   build: ok | failed | refused  refused: the file itself was refused (a link out of its folder), nothing built
//   status: S | [S, ...]          the status of every case no rule below matches
//   cases: [{match: GLOB, status: S | [S, ...], detail_contains: TEXT}, ...]
//                                 first matching rule wins; GLOB as in fnmatch. detail_contains (optional): the
//                                 case's detail must also contain TEXT (ignoring case)
//   outcome: passed | failed      optional
//   diagnostics_contain: TEXT     optional: the build's diagnostics contain TEXT
//   diagnostics_lack: TEXT        optional: the build's diagnostics do not contain TEXT (what must stay hidden)
//   student_view_lacks: [TEXT]    optional: neither the text nor the JSON report a student sees contains any TEXT
//                                 (a hidden case's size, say); checked when a GPU ran the cases
//   rubric: PATH                  optional: grade with this rubric (PATH relative to COURSE_DIR) instead of
//                                 rubrics/EXERCISE.yaml
//   reference_after: true         optional: then grade COURSE_DIR/reference with the same rubric and require every
//                                 case to pass (the speed case may be slow: the reference against itself is noise),
//                                 proof that the grader and the GPU are healthy after the submission
//   protections_contain: TEXT     optional: one of the report's protections (the sandbox protections that applied to
//                                 the run) contains TEXT (ignoring case); checked only when a GPU ran the cases
//   patterns: [TEXT]              optional: the diagnosis the bug must get: for each TEXT, one of the patterns the
//                                 failing cases share (failure_patterns.hpp) contains it; checked when a GPU ran
//                                 the cases
//   diagnosis: [TEXT]             optional: each TEXT is in the summary or evidence of some case's diagnosis (the
//                                 harness's explanation of a wrong answer, a compute-sanitizer rerun, racecheck,
//                                 Nsight Compute's profile of the speed test: docs/diagnoses.md); checked when a GPU
//                                 ran the cases
//
// Without a GPU, the cases that were graded anyway (a build failure, a submission rejected before it ran) are
// checked; if any case was skipped the result is 77, unless something mismatched.
#include <fnmatch.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "grading/check.hpp"
#include "score/failure_patterns.hpp"

namespace {

using namespace cugrade;

std::vector<std::string> statuses(const YAML::Node& node) {
    if (node.IsSequence()) {
        return node.as<std::vector<std::string>>();
    }
    return {node.as<std::string>()};
}

struct Expectation {
    std::vector<std::string> statuses;
    std::optional<std::string> detail_contains;
};

Expectation expected_for(const YAML::Node& expected, const std::string& id) {
    for (const auto& rule : expected["cases"]) {
        if (::fnmatch(rule["match"].as<std::string>().c_str(), id.c_str(), 0) == 0) {
            Expectation e{statuses(rule["status"]), std::nullopt};
            if (rule["detail_contains"]) {
                e.detail_contains = rule["detail_contains"].as<std::string>();
            }
            return e;
        }
    }
    return {statuses(expected["status"]), std::nullopt};
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

bool contains_ignoring_case(const std::string& text, const std::string& part) {
    return lower(text).find(lower(part)) != std::string::npos;
}

// The report's protections, where this cugrade reports them (ExerciseReport::protections).
template <class R>
std::optional<std::vector<std::string>> protections_of(const R& exercise) {
    if constexpr (requires { exercise.protections; }) {
        return std::vector<std::string>(exercise.protections.begin(), exercise.protections.end());
    } else {
        return std::nullopt;
    }
}

bool is_allowed(const std::vector<std::string>& allowed, Status status) {
    return std::find(allowed.begin(), allowed.end(), to_string(status)) != allowed.end();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::cerr << "usage: fixture_check COURSE_DIR SUBMISSION_DIR EXERCISE EXPECTED_YAML CACHE_DIR\n";
        return 2;
    }
    const std::filesystem::path course_dir = argv[1];
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
        options.cpu = CpuSelfCheck::never;  // a GPU fixture: without a GPU it reports skipped (77)
        if (expected["rubric"]) {
            options.rubric = course_dir / expected["rubric"].as<std::string>();
        }
        const Report report = check(Course{course_dir}, options);
        print_report(std::cout, report, ReportOptions{true, 140});
        // For the record of a GPU run: every fixture's full report as JSON, named after its folder.
        if (const char* dir = std::getenv("CUGRADE_FIXTURE_REPORTS"); dir != nullptr && *dir != '\0') {
            const auto name = exercise_name + "-" + std::filesystem::path(argv[2]).filename().string() + ".json";
            std::ofstream(std::filesystem::path(dir) / name)
                << report_to_json(report, ReportOptions{true, 140}).dump(2);
            // Where the grading's time went, which no report shows: what scripts/diagnosis_table.py reads.
            if (report.exercises.size() == 1) {
                const StageSeconds& t = report.exercises[0].seconds;
                std::filesystem::create_directories(std::filesystem::path(dir) / "seconds");
                std::ofstream(std::filesystem::path(dir) / "seconds" / name) << nlohmann::json{
                    {"build", t.build},           {"startup", t.startup},      {"correctness", t.correctness},
                    {"race_check", t.race_check}, {"speed", t.speed},          {"diagnosis", t.diagnosis},
                    {"gpu_wait", t.gpu_wait},     {"quiet_wait", t.quiet_wait}}.dump(2);
            }
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
        if (expected["diagnostics_lack"] &&
            exercise.build.diagnostics.find(expected["diagnostics_lack"].as<std::string>()) != std::string::npos) {
            mismatch(fmt::format("the diagnostics show '{}'", expected["diagnostics_lack"].as<std::string>()));
        }
        if (expected["build"].as<std::string>() == "refused" && exercise.build.attempted) {
            mismatch("the file was built, expected it refused before building");
        }
        // Without a GPU, only the cases graded anyway (a build failure, a rejection before anything ran) are checked.
        const bool no_gpu = exercise.build.ok && !report.gpu.available;
        int unchecked = 0;
        for (const auto& c : exercise.cases) {
            if (no_gpu && c.status == Status::skipped) {
                ++unchecked;
                continue;
            }
            const Expectation want = expected_for(expected, c.plan.id);
            if (!is_allowed(want.statuses, c.status)) {
                mismatch(fmt::format("{}: {}, expected {} ({})", c.plan.id, to_string(c.status),
                                     fmt::join(want.statuses, " or "), c.detail));
            } else if (want.detail_contains && !contains_ignoring_case(c.detail, *want.detail_contains)) {
                mismatch(fmt::format("{}: {} as expected, but the detail lacks '{}' ({})", c.plan.id,
                                     to_string(c.status), *want.detail_contains, c.detail));
            }
        }
        if (no_gpu && unchecked > 0) {
            std::cout << fmt::format("the build is as expected; no GPU, so {} of {} verdicts were not checked\n",
                                     unchecked, exercise.cases.size());
            if (mismatches > 0) {
                std::cout << fmt::format("{} mismatches\n", mismatches);
            }
            return mismatches > 0 ? 1 : 77;
        }
        // The protections are those of the run: with no GPU nothing ran.
        if (expected["protections_contain"] && report.gpu.available) {
            const auto text = expected["protections_contain"].as<std::string>();
            const auto protections = protections_of(exercise);
            if (!protections) {
                mismatch(fmt::format("protections_contain '{}': this cugrade reports no protections", text));
            } else if (std::none_of(protections->begin(), protections->end(),
                                    [&](const std::string& p) { return contains_ignoring_case(p, text); })) {
                const std::string had =
                    protections->empty() ? "none" : fmt::format("{}", fmt::join(*protections, "; "));
                mismatch(fmt::format("no protection contains '{}' (the run had: {})", text, had));
            }
        }

        if (expected["patterns"] && report.gpu.available) {
            const auto& patterns = exercise.patterns;
            for (const auto& item : expected["patterns"]) {
                const auto text = item.as<std::string>();
                if (std::none_of(patterns.begin(), patterns.end(),
                                 [&](const Diagnosis& d) { return contains_ignoring_case(d.summary, text); })) {
                    std::vector<std::string> had;
                    for (const auto& d : patterns) {
                        had.push_back(d.summary);
                    }
                    mismatch(fmt::format("no pattern contains '{}' (found: {})", text,
                                         had.empty() ? "none" : fmt::format("{}", fmt::join(had, "; "))));
                }
            }
        }

        std::string found;  // every case's diagnosis, summary and evidence: what a diagnosis claims
        for (const auto& c : exercise.cases) {
            if (c.diagnosis) {
                found += c.diagnosis->summary + " (" + fmt::format("{}", fmt::join(c.diagnosis->evidence, "; ")) + ") ";
            }
        }
        if (expected["diagnosis_lacks"] && report.gpu.available) {
            for (const auto& item : expected["diagnosis_lacks"]) {
                if (contains_ignoring_case(found, item.as<std::string>())) {
                    mismatch(fmt::format("a case's diagnosis claims '{}' (found: {})", item.as<std::string>(), found));
                }
            }
        }
        if (expected["diagnosis"] && report.gpu.available) {
            for (const auto& item : expected["diagnosis"]) {
                if (!contains_ignoring_case(found, item.as<std::string>())) {
                    mismatch(fmt::format("no case's diagnosis contains '{}' (found: {})", item.as<std::string>(),
                                         found.empty() ? "none" : found));
                }
            }
        }

        if (expected["student_view_lacks"] && report.gpu.available) {
            std::ostringstream text;
            print_report(text, report, ReportOptions{});
            const std::string student_view = text.str() + report_to_json(report, ReportOptions{}).dump();
            for (const auto& item : expected["student_view_lacks"]) {
                if (student_view.find(item.as<std::string>()) != std::string::npos) {
                    mismatch(fmt::format("the report a student sees shows '{}'", item.as<std::string>()));
                }
            }
        }

        if (expected["outcome"] && to_string(exercise.outcome()) != expected["outcome"].as<std::string>()) {
            mismatch(fmt::format("outcome {}, expected {}", to_string(exercise.outcome()),
                                 expected["outcome"].as<std::string>()));
        }

        // The reference after the submission: the grader and the GPU must still grade a correct program correctly.
        if (expected["reference_after"] && expected["reference_after"].as<bool>()) {
            if (!report.gpu.available) {
                std::cout << "no GPU: the reference was not graded after the submission\n";
            } else {
                CheckOptions after = options;
                after.submission_dir = course_dir / "reference";
                std::cout << "\nthe reference, graded after the submission:\n";
                const Report reference = check(Course{course_dir}, after);
                print_report(std::cout, reference, ReportOptions{true, 140});
                if (reference.exercises.size() != 1) {
                    mismatch(
                        fmt::format("reference after: graded {} exercises, expected 1", reference.exercises.size()));
                } else if (const auto& r = reference.exercises.front(); r.error) {
                    mismatch("reference after: cugrade failed: " + *r.error);
                } else if (!r.build.ok) {
                    mismatch("reference after: the build failed: " + r.build.diagnostics);
                } else {
                    for (const auto& c : r.cases) {
                        if (c.status != Status::passed && !(c.plan.timed && c.status == Status::slow)) {
                            mismatch(fmt::format("reference after: {}: {}, expected passed ({})", c.plan.id,
                                                 to_string(c.status), c.detail));
                        }
                    }
                }
            }
        }
        std::cout << (mismatches == 0 ? "every verdict as expected\n" : fmt::format("{} mismatches\n", mismatches));
        return mismatches == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "fixture_check: " << e.what() << "\n";
        return 1;
    }
}
