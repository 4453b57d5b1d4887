// Memory checks and a wrong answer's reruns under compute-sanitizer: fresh or kept checkers, within their budget.
#include "catch.hpp"
#include "scripted_run.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

using namespace cugrade;
using namespace scripted_run;

TEST_CASE("the compute-sanitizer reruns of a failing case that never ends stop within their budget and say so") {
    std::vector<CasePlan> cases = plans({"pass-1", "toolhang-2"});
    cases[1].case_seconds = 10.0;
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-reruns.jsonl";
    std::filesystem::remove(file);
    RunOptions options = with_tools("-reruns", 2.0);
    RunTrace trace(file);
    options.trace = &trace;
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    CHECK(result.cases[1].status == Status::wrong_answer);
    CHECK(result.cases[1].detail == "expected 1, got 2");
    CHECK_FALSE(result.cases[1].diagnosis);
    // memcheck, then initcheck and synccheck for a wrong answer: all three within one budget of 2 s. memcheck,
    // stopped at the budget rather than at the case's 10 s, spent it: neither of the others ran.
    REQUIRE(result.diagnosis_notes.size() == 1);
    CHECK(result.diagnosis_notes[0] == "compute-sanitizer's memcheck stopped after 2 s on toolhang-2");
    std::vector<std::string> tools;
    for (const auto& process : trace_events(file, "")) {
        tools.push_back(process["tool"]);
    }
    CHECK(tools == std::vector<std::string>{"none", "memcheck"});
}

TEST_CASE("what memcheck caught in the memory check fails its case as a memory error, and a race stays a race") {
    std::vector<CasePlan> cases = plans({"pass-1", "oob-race", "racy-17", "pass-race"});
    for (std::size_t i = 1; i < cases.size(); ++i) {
        cases[i].race_check = true;
        cases[i].memory_check = true;
    }
    RunOptions options = with_tools("-memory-beside-races", 5.0);
    options.student_files = {"sum.cu"};
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::memory_error);
    CHECK(result.cases[1].detail == "compute-sanitizer memcheck found an access outside every allocation");
    REQUIRE(result.cases[1].diagnosis);
    CHECK(result.cases[1].diagnosis->scope == "this case");
    CHECK(result.cases[2].status == Status::race);
    CHECK(result.cases[3].status == Status::passed);
}

TEST_CASE("the race and memory checks run only the cases a report could fail: not one that faulted or raced already") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-memory-overrulable.jsonl";
    std::filesystem::remove(file);
    std::vector<CasePlan> cases = plans({"pass-1", "cuda-race", "racy-17", "oob-race", "fail-race", "pass-race"});
    for (std::size_t i = 1; i < cases.size(); ++i) {
        cases[i].race_check = true;
        cases[i].memory_check = true;
    }
    RunOptions options = with_tools("-memory-overrulable", 5.0);
    options.student_files = {"sum.cu"};
    RunTrace trace(file);
    options.trace = &trace;
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    CHECK(result.cases[1].status == Status::cuda_error);
    CHECK(result.cases[2].status == Status::race);
    CHECK(result.cases[3].status == Status::memory_error);
    CHECK(result.cases[4].status == Status::wrong_answer);
    CHECK(result.cases[5].status == Status::passed);
    std::vector<std::string> under_racecheck, under_memcheck;
    for (const auto& record : trace_events(file, "case")) {
        if (record["tool"] == "racecheck") {
            under_racecheck.push_back(record["case"]);
        } else if (record["tool"] == "memcheck") {
            under_memcheck.push_back(record["case"]);
        }
    }
    CHECK(under_racecheck == std::vector<std::string>{"racy-17", "oob-race", "fail-race", "pass-race"});
    CHECK(under_memcheck == std::vector<std::string>{"oob-race", "fail-race", "pass-race"});
}

TEST_CASE("in a batch a kept memcheck says whether memcheck has anything to say; a report goes to a fresh memcheck") {
    InABatch batch("kept-memcheck", 5.0, 2);
    RunOptions& options = batch.options;
    options.student_files = {"sum.cu"};
    options.diagnose = false;  // only the memory check's processes: the wrong answer's reruns have a test of their own
    std::vector<RunResult> results;
    for (const auto& ids : {std::vector<std::string>{"pass-1", "fail-2"}, std::vector<std::string>{"pass-3", "oob-4"},
                            std::vector<std::string>{"pass-5", "pass-6"}}) {
        std::vector<CasePlan> cases = plans(ids);
        for (auto& c : cases) {
            c.memory_check = true;
        }
        options.trace_label = ids.front();
        results.push_back(run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options));
    }
    CHECK(results[0].cases[0].status == Status::passed);
    CHECK(results[0].cases[1].status == Status::wrong_answer);
    CHECK(results[1].cases[0].status == Status::passed);
    CHECK(results[1].cases[1].status == Status::memory_error);
    REQUIRE(results[1].cases[1].diagnosis);
    CHECK(results[2].cases[0].status == Status::passed);
    CHECK(results[2].cases[1].status == Status::passed);
    std::vector<std::string> memcheck_endings;
    int checkers_started = 0;
    for (const auto& record : trace_events(batch.file, "")) {
        checkers_started += record.value("kept_job", 0) == 1 ? 1 : 0;
        if (record["tool"] == "memcheck") {
            memcheck_endings.push_back(record["ended"]);
        }
    }
    // The fault memcheck stops ends the kept checker before the job's end; a fresh memcheck reports it.
    CHECK(memcheck_endings == std::vector<std::string>{"a job served, nothing reported",
                                                       "a job not finished: its checker ended", "exited with code 86",
                                                       "a job served, nothing reported"});
    CHECK(checkers_started == 2);
    CHECK(std::count(memcheck_endings.begin(), memcheck_endings.end(), "a job served, nothing reported") == 2);
}

TEST_CASE("in a batch a wrong answer's reruns ask kept checkers first; what a tool found comes from a fresh process") {
    InABatch batch("kept-reruns", 20.0, 4);
    RunOptions& options = batch.options;
    options.student_files = {"sum.cu"};
    std::vector<RunResult> results;
    for (const auto& ids : {std::vector<std::string>{"pass-1", "fail-2"}, std::vector<std::string>{"fail-3"},
                            std::vector<std::string>{"pass-4", "oobwrong-5"}, std::vector<std::string>{"cuda-6"}}) {
        options.trace_label = ids.back();
        results.push_back(run_cases(CUGRADE_SCRIPTED_HARNESS, plans(ids), options));
    }
    CHECK(results[0].cases[1].status == Status::wrong_answer);
    CHECK_FALSE(results[0].cases[1].diagnosis);  // no tool found anything, kept or fresh
    CHECK_FALSE(results[1].cases[0].diagnosis);
    // memcheck's report, read from a fresh memcheck: the verdict stays the graded run's.
    CHECK(results[2].cases[1].status == Status::wrong_answer);
    REQUIRE(results[2].cases[1].diagnosis);
    CHECK(results[2].cases[1].diagnosis->scope == "found on oobwrong-5");
    CHECK(results[3].cases[0].status == Status::cuda_error);
    std::vector<std::string> endings;  // "tool: ending", reruns only
    for (const auto& record : trace_events(batch.file, "")) {
        if (record["tool"] != "none") {
            endings.push_back(record["tool"].get<std::string>() + ": " + record["ended"].get<std::string>());
            CHECK(record.value("bare_buffers", true));  // a kept job's record says so; a fresh process's has none
        }
    }
    // initcheck always starts afresh; a CUDA error goes to a fresh memcheck at once.
    CHECK(endings == std::vector<std::string>{
                         "memcheck: a job served, nothing reported", "initcheck: exited with code 0",
                         "synccheck: a job served, nothing reported", "memcheck: a job served, nothing reported",
                         "initcheck: exited with code 0", "synccheck: a job served, nothing reported",
                         "memcheck: a job not finished: its checker ended", "memcheck: exited with code 86",
                         "memcheck: exited with code 3"});
}
