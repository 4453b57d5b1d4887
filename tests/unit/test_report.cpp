// The report's two forms against golden files. Set CUGRADE_UPDATE_GOLDEN=1 to rewrite them after a deliberate change.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "catch.hpp"
#include "score/failure_patterns.hpp"
#include "report/report.hpp"

namespace {

using namespace cugrade;

ScoredCase scored(const std::string& id, Visibility visibility, Status status, double points, double max_points,
                  const std::string& detail) {
    ScoredCase c;
    c.plan.id = id;
    c.plan.group = id.substr(0, id.find('/'));
    c.plan.visibility = visibility;
    c.plan.max_points = max_points;
    if (const auto n = id.find("/n="); n != std::string::npos) {
        c.plan.shape = {std::stoull(id.substr(n + 3))};
    }
    c.status = status;
    c.points = points;
    c.detail = detail;
    return c;
}

Report sample_report() {
    Report report;
    report.cugrade_version = "0.1.0";
    report.gpu = {true, "NVIDIA H100 80GB HBM3", 9, 0, ""};
    ExerciseReport exercise;
    exercise.exercise = "sum";
    exercise.title = "Vector sum";
    exercise.submission = "student/sum.cu";
    exercise.rubric = "rubrics/sum.yaml";
    exercise.build.ok = true;
    exercise.build.cached = true;
    exercise.build.diagnostics =
        "student/sum.cu:12: warning #177-D: variable \"unused\" was declared but never referenced\n";
    exercise.cases.push_back(scored("edges/n=1/integers", Visibility::visible, Status::passed, 1.25, 1.25, ""));
    exercise.cases.push_back(scored("edges/n=256/integers", Visibility::visible, Status::passed, 1.25, 1.25, ""));
    ScoredCase explained = scored("edges/n=257/integers", Visibility::visible, Status::wrong_answer, 0, 1.25,
                                  "call 1 of 3: n=257: expected 514, got 512 (off by 2, tolerance 0)");
    explained.diagnosis = Diagnosis{"answer",
                                    "the last element is left out",
                                    "this case",
                                    {"expected 514, got 512: the total of indices 0 to 255, without index 256"},
                                    "a bound one short: i < n - 1 or i + 1 < n where i < n is meant",
                                    "",
                                    "the last elements left out",
                                    "bounds"};
    exercise.cases.push_back(explained);
    exercise.cases.push_back(scored("edges/n=1025/integers", Visibility::visible, Status::wrong_answer, 0, 1.25,
                                    "call 1 of 3: n=1025: expected 2050, got 2048 (off by 2, tolerance 0)"));
    ScoredCase hidden = scored("large/n=4194301/integers", Visibility::hidden, Status::wrong_answer, 0, 5,
                               "call 1 of 3: n=4194301: expected 8388045, got 8387790 (off by 255, tolerance 0)");
    hidden.diagnosis = Diagnosis{"memory",
                                 "compute-sanitizer memcheck: an out-of-bounds read of 4 bytes in global memory in "
                                 "partial_sums at sum.cu:10",
                                 "found on large/n=4194301/integers",
                                 {"thread (253,0,0) of block (16383,0,0)",
                                  "index 4194301 of an array of 4194301 elements of 4 bytes (the last is 4194300)"},
                                 "a thread reads past the end of an array: guard the load with the bound (i < n)",
                                 "========= Invalid __global__ read of size 4 bytes\n",
                                 "an out-of-bounds read in global memory (memcheck)"};
    exercise.cases.push_back(hidden);
    ScoredCase speed = scored("speed/n=268435456/positive", Visibility::visible, Status::slow, 20, 30,
                              "2.10x the reference's time: 0.840 ms vs 0.400 ms (1278 GB/s, median of 25); 1.50x "
                              "or faster earns 30");
    speed.measurements = {{"submission_ms", 0.84}, {"reference_ms", 0.4}, {"samples", 25}, {"ratio", 2.1}};
    speed.diagnosis = Diagnosis{"speed",
                                "Nsight Compute: partial_sums (97% of the time) runs 64 blocks on a GPU of 132 SMs: 64 "
                                "of 132 SMs busy",
                                "found on speed/n=268435456/positive",
                                {"the kernels moved 1074 MB at 1300 GB/s: 43% of the copy's 3000 GB/s"},
                                "launch enough blocks to fill every SM, several per SM",
                                "\"ID\",\"Kernel Name\"\n",
                                "too few blocks: idle SMs"};
    exercise.cases.push_back(speed);
    exercise.patterns = failure_patterns(exercise.cases);
    exercise.diagnosis_notes = {"the speed test could not be profiled: Nsight Compute exited with code 1: ==ERROR== "
                                "ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                                "Performance Counters on the target device 0."};
    exercise.program_output = "debug: blocks=1024\n";
    exercise.protections = {"landlock (abi 7): files outside the working folder and the system's folders unreadable",
                            "seccomp (harness): no new processes, no network"};
    report.exercises.push_back(exercise);
    return report;
}

void check_golden(const std::string& name, const std::string& actual) {
    const std::string path = std::string(CUGRADE_TEST_DATA) + "/golden/" + name;
    if (std::getenv("CUGRADE_UPDATE_GOLDEN") != nullptr) {
        std::ofstream(path) << actual;
    }
    std::ifstream in(path);
    std::stringstream expected;
    expected << in.rdbuf();
    CHECK(actual == expected.str());
}

}  // namespace

TEST_CASE("the text report matches its golden file") {
    std::ostringstream text;
    print_report(text, sample_report(), ReportOptions{false, 110});
    check_golden("report.txt", text.str());
}

TEST_CASE("the JSON report matches its golden file and keeps hidden cases hidden") {
    const auto json = report_to_json(sample_report(), ReportOptions{false, 110});
    check_golden("report.json", json.dump(2) + "\n");
    CHECK(json["exercises"][0]["cases"][4]["id"] == "hidden-1");
    CHECK(json["exit_code"] == 1);
    // The hidden case failed too, and no pattern speaks of it; its diagnosis keeps the cause and not the case.
    CHECK(json["exercises"][0]["patterns"].dump().find("4194301") == std::string::npos);
    const auto& hidden = json["exercises"][0]["cases"][4]["diagnosis"];
    CHECK(hidden["summary"].get<std::string>().find("at sum.cu:10") != std::string::npos);
    CHECK(hidden["scope"] == "found on a hidden case");
    CHECK(hidden["evidence"].empty());
    CHECK(hidden["tool_output"] == "");
    CHECK(json.dump().find("4194301") == std::string::npos);
    const auto instructor = report_to_json(sample_report(), ReportOptions{true, 110});
    CHECK(instructor["exercises"][0]["cases"][4]["diagnosis"]["evidence"].size() == 2);
}

TEST_CASE("a wrong matrix's map shows under its case, and a hidden case's stays out of every form") {
    Report report = sample_report();
    ExerciseReport& exercise = report.exercises[0];
    ScoredCase matrix = scored("edges/3x1025/signed", Visibility::visible, Status::wrong_answer, 0, 1, "3x1025: wrong");
    matrix.plan.shape = {3, 1025};
    matrix.diagnosis = Diagnosis{"answer",
                                 "about 2% of the elements are wrong",
                                 "this case",
                                 {"c[0][1024] expected 1, got nan (never written)"},
                                 "",
                                 "",
                                 "",
                                 "",
                                 {"...............#", "...............#", "...............#"}};
    exercise.cases.push_back(matrix);
    matrix.plan.visibility = Visibility::hidden;
    exercise.cases.push_back(matrix);

    std::ostringstream text;
    print_report(text, report, ReportOptions{false, 110});
    const std::string shown = text.str();
    const auto map_at = shown.find("      where the wrong elements lie:\n        ...............#\n");
    CHECK(map_at != std::string::npos);
    // Once: the hidden case shows its summary, not its map.
    CHECK(shown.find("where the wrong elements lie:", map_at + 20) == std::string::npos);
    CHECK(shown.find("about 2% of the elements are wrong") != shown.rfind("about 2% of the elements are wrong"));

    // One hint for many cases with one cause: given under the first only.
    ScoredCase again = scored("edges/n=1023/integers", Visibility::visible, Status::wrong_answer, 0, 1, "wrong");
    again.diagnosis = exercise.cases[2].diagnosis;
    Report twice = report;
    twice.exercises[0].cases.push_back(again);
    std::ostringstream twice_text;
    print_report(twice_text, twice, ReportOptions{false, 110});
    const std::string hint = "likely: a bound one short";
    CHECK(twice_text.str().find(hint) != std::string::npos);
    CHECK(twice_text.str().find(hint) == twice_text.str().rfind(hint));

    const auto json = report_to_json(report, ReportOptions{false, 110});
    const auto& cases = json["exercises"][0]["cases"];
    CHECK(cases[6]["diagnosis"]["map"].size() == 3);
    CHECK(cases[7]["diagnosis"]["map"].empty());
    CHECK(cases[7]["diagnosis"]["evidence"].empty());
}

TEST_CASE("a report where nothing ran says so in one row") {
    Report report = sample_report();
    ExerciseReport& exercise = report.exercises[0];
    exercise.build = {};
    exercise.build.step = "compile";
    exercise.build.diagnostics = "student/sum.cu:10: error: identifier \"inptu\" is undefined\n";
    exercise.program_output.clear();
    exercise.protections.clear();
    for (auto& c : exercise.cases) {
        c.status = Status::build_failed;
        c.points = 0;
        c.detail = "the submission did not compile; see the compiler's messages below";
        c.diagnosis.reset();
    }
    exercise.patterns = failure_patterns(exercise.cases);
    exercise.diagnosis_notes.clear();
    std::ostringstream text;
    print_report(text, report, ReportOptions{false, 110});
    check_golden("report-build-failed.txt", text.str());
}

TEST_CASE("a submission rejected by the static checks gets one row and the list of what it broke") {
    Report report = sample_report();
    ExerciseReport& exercise = report.exercises[0];
    exercise.build.diagnostics.clear();
    exercise.program_output.clear();
    exercise.protections.clear();
    exercise.violations = {
        "student/sum.cu:3: uses CUB (cub::DeviceReduce::Sum), which this exercise forbids: write the kernels yourself",
        "student/sum.cu:9: calls fork(), which submissions may not use: a submission starts no processes"};
    for (auto& c : exercise.cases) {
        c.status = Status::rejected;
        c.points = 0;
        c.detail = exercise.violations.front();
        c.diagnosis.reset();
    }
    exercise.patterns = failure_patterns(exercise.cases);
    exercise.diagnosis_notes.clear();
    std::ostringstream text;
    print_report(text, report, ReportOptions{false, 110});
    check_golden("report-rejected.txt", text.str());
}

TEST_CASE("instructors may see hidden cases") {
    const auto json = report_to_json(sample_report(), ReportOptions{true, 110});
    CHECK(json["exercises"][0]["cases"][4]["id"] == "large/n=4194301/integers");
}

TEST_CASE("the outcome ranks error over failed over skipped over passed") {
    Report report = sample_report();
    CHECK(report.exit_code() == ExitCode::failed);
    for (auto& c : report.exercises[0].cases) {
        c.status = Status::skipped;
    }
    CHECK(report.exit_code() == ExitCode::skipped);
    report.exercises[0].cases[0].status = Status::harness_error;
    CHECK(report.exit_code() == ExitCode::internal_error);
}

TEST_CASE("text that is not UTF-8, or that would steer a terminal, is made safe in every form") {
    Report report = sample_report();
    ExerciseReport& exercise = report.exercises.front();
    exercise.build.diagnostics = "student/sum.cu:3: warning: caf\xE9 \xC3";  // Latin-1, then cut mid-character
    exercise.program_output = "\x1b]0;pwned\x07\x1b[2Jcleared\n";
    std::ostringstream text;
    print_report(text, report, ReportOptions{});
    CHECK(text.str().find('\x1b') == std::string::npos);
    CHECK(text.str().find('\x07') == std::string::npos);
    CHECK(text.str().find("caf\xEF\xBF\xBD \xEF\xBF\xBD") != std::string::npos);
    const nlohmann::json json = report_to_json(report, ReportOptions{});
    CHECK(json["exercises"][0]["build"]["diagnostics"] == "student/sum.cu:3: warning: caf\xEF\xBF\xBD \xEF\xBF\xBD");
    CHECK_NOTHROW(json.dump());
}
