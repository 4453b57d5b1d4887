// Race checks: the race cases under one racecheck or a kept checker's job, and each hazard on the case it belongs
// to.
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

TEST_CASE("a race check that never ends is stopped at its case's limit and says so; the other cases keep theirs") {
    // racehang passes, but hangs under racecheck; hang hangs in the graded run too, and is not race-checked.
    std::vector<CasePlan> cases = plans({"pass-1", "racehang-race", "pass-race", "hang-race"});
    cases[1].race_check = cases[2].race_check = cases[3].race_check = true;
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, with_tools("-racecheck", 5.0));
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::timed_out);
    CHECK(result.cases[1].detail ==
          "racecheck stopped after 1 s: the case did not finish under the tool, which runs kernels many times "
          "slower: an endless loop, blocks waiting on each other, or far too slow");
    CHECK(result.cases[2].status == Status::passed);
    CHECK(result.cases[3].status == Status::timed_out);
    CHECK(result.cases[3].detail ==
          "no result within 1 s: an endless loop, blocks waiting on each other, or far too slow");
    CHECK(result.seconds.race_check > 0.9);
}

TEST_CASE("the race cases run under one racecheck, and a hazard lands on the case whose part of the output shows it") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-races.jsonl";
    std::filesystem::remove(file);
    // A case after a report without its own is clean where racecheck's summary says it printed every report; where
    // it left one out past its print limit, that case runs again alone and shows its own.
    enum class After { nothing, clean_case, left_out_report };
    const After after_report = GENERATE(After::nothing, After::clean_case, After::left_out_report);
    std::vector<CasePlan> cases =
        after_report == After::nothing ? plans({"pass-1", "pass-race-a", "pass-race-b", "racy-17", "racy-23"})
        : after_report == After::clean_case
            ? plans({"pass-1", "pass-race-a", "racy-17", "pass-race-b", "racy-23"})
            : plans({"pass-1", "pass-race-a", "racy-17", "racyquiet-19", "racy-23", "pass-race-b"});
    for (std::size_t i = 1; i < cases.size(); ++i) {
        cases[i].race_check = true;
    }
    RunOptions options = with_tools("-races", 5.0);
    RunTrace trace(file);
    options.trace = &trace;
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    const auto status_of = [&](const std::string& id) {
        for (std::size_t i = 0; i < cases.size(); ++i) {
            if (cases[i].id == id) {
                return result.cases[i].status;
            }
        }
        return Status::harness_error;
    };
    CHECK(status_of("pass-race-a") == Status::passed);
    CHECK(status_of("pass-race-b") == Status::passed);
    CHECK(status_of("racy-17") == Status::race);
    CHECK(status_of("racy-23") == Status::race);
    if (after_report == After::left_out_report) {
        CHECK(status_of("racyquiet-19") == Status::race);
    }
    const auto& racy_17 = result.cases[after_report == After::nothing ? 3 : 2];
    const auto& racy_23 = result.cases[4];
    REQUIRE(racy_17.diagnosis);
    REQUIRE(racy_23.diagnosis);
    CHECK(racy_17.diagnosis->summary != racy_23.diagnosis->summary);       // each its own report
    CHECK(result.output.text.find("cugrade-case-") == std::string::npos);  // the markers are not the program's
    // racecheck's reports are the diagnoses', not what the program printed.
    CHECK(result.output.text.find("Race reported") == std::string::npos);
    const auto processes = trace_events(file, "");  // a process's record has no "event"
    const auto racecheck_processes = std::count_if(processes.begin(), processes.end(),
                                                   [](const auto& record) { return record["tool"] == "racecheck"; });
    // Where one was left out, each case after the first report without one of its own runs alone: which had it
    // cannot be told.
    CHECK(racecheck_processes == (after_report == After::left_out_report ? 3 : 1));
}

TEST_CASE(
    "in a batch a kept checker's job decides the race cases; a report of its own marks a race, with no fresh racecheck") {
    GpuGate gate;  // outlives the kept checkers, which end holding it
    InABatch batch("kept", 5.0, 2);
    RunOptions& options = batch.options;
    options.gpu_gate = &gate;
    const std::vector<std::vector<std::string>> submissions = {{"pass-race-a", "pass-race-b"},
                                                               {"pass-race-c", "pass-race-d"},
                                                               {"pass-race-e", "racy-17"},
                                                               {"fail-race-f", "pass-race-g"},
                                                               {"pass-race-h", "pass-race-i"}};
    std::vector<RunResult> results;
    for (const auto& ids : submissions) {
        std::vector<CasePlan> cases = plans(ids);
        for (auto& c : cases) {
            c.race_check = true;
        }
        options.trace_label = ids.front();
        results.push_back(run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options));
    }
    for (const std::size_t k : {0, 1, 4}) {
        CHECK(results[k].cases[0].status == Status::passed);
        CHECK(results[k].cases[1].status == Status::passed);
    }
    // The race is the kept job's report in that case's part, the wrong answer the graded run's.
    CHECK(results[2].cases[0].status == Status::passed);
    CHECK(results[2].cases[1].status == Status::race);
    CHECK(results[3].cases[0].status == Status::wrong_answer);
    CHECK(results[3].cases[1].status == Status::passed);
    std::vector<std::string> racecheck_endings;
    std::vector<std::string> graded_first;  // the first case of each process without a tool
    int checkers_started = 0;
    for (const auto& record : trace_events(batch.file, "")) {
        checkers_started += record.value("kept_job", 0) == 1 ? 1 : 0;
        if (record["tool"] == "racecheck") {
            racecheck_endings.push_back(record["ended"]);
        } else {
            graded_first.push_back(record["first_case"]);
        }
    }
    CHECK(racecheck_endings ==
          std::vector<std::string>{"a job served, nothing reported", "a job served, nothing reported",
                                   "a job served, a report: its checker ended", "a job served, nothing reported",
                                   "a job served, nothing reported"});
    CHECK(graded_first ==
          std::vector<std::string>{"pass-race-a", "pass-race-c", "pass-race-e", "fail-race-f", "pass-race-h"});
    // A checker that reported is ended: its print limit spent, and the report might have been another's.
    CHECK(checkers_started == 2);
    CHECK(std::count(racecheck_endings.begin(), racecheck_endings.end(), "a job served, nothing reported") == 4);
    batch.pool.reset();  // ends the one still waiting, holding the GPU shared as it goes
    CHECK(gate.shared_holders() == 0);
}

using RacecheckRun = std::pair<std::string, std::string>;  // how a racecheck process or kept job ended; its first case

// Race-checked cases graded as a batch grades them, its kept checkers from a pool of one (in a folder and trace named
// `name`): the verdicts, and how each racecheck process and kept job ended. The gate is free once the pool is gone.
std::pair<RunResult, std::vector<RacecheckRun>> graded_with_kept_racecheck(const std::string& name,
                                                                           const std::vector<std::string>& ids) {
    GpuGate gate;  // outlives the kept checkers, which end holding it
    InABatch batch(name, 5.0, 1);
    batch.options.gpu_gate = &gate;
    const std::vector<CasePlan> cases = race_checked(ids);
    RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, batch.options);
    batch.pool.reset();
    CHECK(gate.shared_holders() == 0);
    return {std::move(result), racecheck_runs(batch.file)};
}

TEST_CASE("after a kept job's report, a case without one of its own runs first in another: the limit may have cut it") {
    // In the kept job racyquiet's report is left out, as racecheck leaves out those past its print limit; in the
    // next job, a checker that has reported nothing, it comes first, and is printed.
    const auto [result, runs] =
        graded_with_kept_racecheck("kept-report-cut", {"pass-race-a", "racy-17", "racyquiet-19", "pass-race-b"});
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::race);
    CHECK(result.cases[2].status == Status::race);
    CHECK(result.cases[3].status == Status::passed);
    CHECK(runs == std::vector<RacecheckRun>{{"a job served, a report: its checker ended", "pass-race-a"},
                                            {"a job served, a report: its checker ended", "racyquiet-19"},
                                            {"a job served, nothing reported", "pass-race-b"}});
}

TEST_CASE("a kept racecheck that ends itself after a case's result decides that case; the cases after run in another") {
    // The harness reports the write past an output, then ends to have the next case run in a fresh process.
    const auto [result, runs] =
        graded_with_kept_racecheck("kept-restart", {"pass-race-a", "restart-race", "pass-race-b"});
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::wrong_answer);
    CHECK(result.cases[1].detail == "wrote past the end of the output");
    CHECK(result.cases[2].status == Status::passed);
    CHECK(runs == std::vector<RacecheckRun>{{"a job not finished: its checker ended", "pass-race-a"},
                                            {"a job served, nothing reported", "pass-race-b"}});
}

TEST_CASE("a kept racecheck job that runs past a case's limit leaves that case to a fresh racecheck, not another job") {
    const auto [result, runs] =
        graded_with_kept_racecheck("kept-past-limit", {"pass-race-a", "racehang-race", "pass-race-b"});
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::timed_out);
    CHECK(result.cases[1].detail.starts_with("racecheck stopped after 1 s"));
    CHECK(result.cases[2].status == Status::passed);
    REQUIRE(runs.size() == 3);
    CHECK(runs[0] == RacecheckRun{"a job not finished: its checker ended", "pass-race-a"});
    CHECK(runs[1].second == "racehang-race");  // a fresh racecheck, stopped at the case's limit
    CHECK(runs[2].second == "pass-race-b");
}

TEST_CASE("where no kernel can touch shared memory, the race cases are graded with the others, without racecheck") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-no-shared-memory.jsonl";
    std::filesystem::remove(file);
    std::vector<CasePlan> cases = plans({"pass-1", "racy-17", "fail-race"});
    cases[1].race_check = true;
    cases[2].race_check = true;
    RunOptions options = with_tools("-no-shared-memory", 5.0);
    options.may_touch_shared_memory = false;
    options.diagnose = false;  // no rerun of the wrong case: only the graded run's processes
    // Not even a missing compute-sanitizer stops them: racecheck was not needed.
    options.compute_sanitizer = GENERATE(std::string(), std::string(CUGRADE_TEST_DATA "/unit/tool_stand_in.sh"));
    RunTrace trace(file);
    options.trace = &trace;
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::passed);
    CHECK(result.cases[2].status == Status::wrong_answer);
    CHECK(result.processes == 1);
    const auto processes = trace_events(file, "");  // a process's record has no "event"
    REQUIRE(processes.size() == 1);
    CHECK(processes[0]["tool"] == "none");
}
