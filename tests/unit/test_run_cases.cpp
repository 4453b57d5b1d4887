// The run loop against a scripted harness: every kind of failure lands on its own case, the others still run; what
// the program prints stays apart; the trace records every process and case.
#include "catch.hpp"
#include "fresh_folder.hpp"
#include "scripted_run.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

using namespace cugrade;
using namespace scripted_run;

TEST_CASE("each failure is pinned on its own case and the remaining cases still run") {
    const RunResult result =
        run({"pass-1", "crash-2", "pass-3", "hang-4", "cuda-5", "pass-6", "exit-7", "fail-8", "pass-9"});
    REQUIRE(result.cases.size() == 9);
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::crashed);
    CHECK(result.cases[1].detail == "the program was killed by signal 11 (SIGSEGV) during this case");
    CHECK(result.cases[2].status == Status::passed);
    CHECK(result.cases[3].status == Status::timed_out);
    CHECK(result.cases[3].detail ==
          "no result within 1 s: an endless loop, blocks waiting on each other, or far too slow");
    CHECK(result.cases[4].status == Status::cuda_error);
    CHECK(result.cases[5].status == Status::passed);
    CHECK(result.cases[6].status == Status::exited_early);
    CHECK(result.cases[6].detail == "the program exited with code 0 before reporting this case");
    CHECK(result.cases[7].status == Status::wrong_answer);
    CHECK(result.cases[7].detail == "expected 1, got 2");
    CHECK(result.cases[8].status == Status::passed);
    CHECK(result.processes == 5);  // the first run, then one restart after each crash, hang, CUDA error and exit
}

// A graded run of `ids` in an empty folder of its own, with its trace's records of `event`.
std::pair<RunResult, std::vector<nlohmann::json>> graded_in_fresh_folder(const std::vector<std::string>& ids,
                                                                         const std::string& name,
                                                                         const std::string& event) {
    RunOptions options;
    options.work_dir = fresh_folder("run", name);
    options.startup_seconds = 5.0;
    const auto file = options.work_dir / "trace.jsonl";
    RunTrace trace(file);
    options.trace = &trace;
    RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, plans(ids), options);
    return {std::move(result), trace_events(file, event)};
}

TEST_CASE("a case ended by a launch failure runs once more, and the second run's verdict is its own") {
    // Another context's fault on a shared GPU can end a correct kernel so; the fresh process after it runs the case
    // again first.
    const auto [result, reruns] =
        graded_in_fresh_folder({"pass-1", "outside-2", "pass-3"}, "outside", "launch_failure_rerun");
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::passed);
    CHECK(result.cases[1].detail.empty());
    CHECK(result.cases[2].status == Status::passed);
    CHECK(result.processes == 2);
    REQUIRE(reruns.size() == 1);
    CHECK(reruns[0]["case"] == "outside-2");
    CHECK(reruns[0]["detail"] == "cudaErrorLaunchFailure: unspecified launch failure");
}

TEST_CASE("a launch failure of the submission's own stays a CUDA error, and only two cases of a run run again") {
    const auto [result, reruns] =
        graded_in_fresh_folder({"trap-1", "trap-2", "trap-3", "cuda-4", "pass-5"}, "traps", "launch_failure_rerun");
    for (const std::size_t i : {0, 1, 2}) {
        CHECK(result.cases[i].status == Status::cuda_error);
        CHECK(result.cases[i].detail == "cudaErrorLaunchFailure: unspecified launch failure");
    }
    CHECK(result.cases[3].status == Status::cuda_error);
    CHECK(result.cases[4].status == Status::passed);
    REQUIRE(reruns.size() == 2);
    CHECK(reruns[0]["case"] == "trap-1");
    CHECK(reruns[1]["case"] == "trap-2");
    // trap-1 twice, trap-2 twice, trap-3 once, cuda-4 once (an illegal address is the submission's), pass-5.
    CHECK(result.processes == 7);
}

TEST_CASE("the checker's CUDA context is made with one hardware queue, the cheapest to make") {
    const RunResult result = run({"queues-1"});
    REQUIRE(result.cases.size() == 1);
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[0].detail == "1");
}

TEST_CASE("what the program prints never counts as a result") {
    const RunResult result = run({"noisy-1", "pass-2"});
    CHECK(result.cases[0].status == Status::wrong_answer);
    CHECK(result.cases[1].status == Status::passed);
    CHECK(result.output.text.find("\"status\":\"passed\"") != std::string::npos);
}

TEST_CASE("hidden cases run after every visible case, and what is printed from the first on is kept apart") {
    // A submission may keep a hidden case's size in a static and print it during a later case: no visible case
    // runs after a hidden one, and what is printed from the first hidden case on is the instructors' alone.
    auto cases = plans({"leak-1", "leak-2", "leak-3", "leak-4"});
    cases[0].shape = {7};
    cases[1].shape = {4194304};
    cases[1].visibility = Visibility::hidden;
    cases[2].shape = {9};
    cases[3].shape = {8388608};
    cases[3].visibility = Visibility::hidden;
    const RunResult result = run_plans(cases);
    for (const auto& c : result.cases) {
        CHECK(c.status == Status::passed);
    }
    CHECK(result.processes == 1);
    CHECK(result.output.text == "seen: [7] \nseen: [7] [9] \n");
    CHECK(result.hidden_output.text == "seen: [7] [9] [4194304] \nseen: [7] [9] [4194304] [8388608] \n");
}

TEST_CASE("after a crash the hidden cases' output is still kept apart, whichever process runs them") {
    auto cases = plans({"leak-1", "crash-2", "leak-3", "leak-4", "crash-5", "leak-6"});
    cases[0].shape = {7};
    cases[2].shape = {9};
    for (std::size_t i : {3, 4, 5}) {
        cases[i].visibility = Visibility::hidden;
        cases[i].shape = {1000 + i};
    }
    const RunResult result = run_plans(cases);
    CHECK(result.cases[1].status == Status::crashed);
    CHECK(result.cases[4].status == Status::crashed);
    CHECK(result.cases[5].status == Status::passed);
    CHECK(result.processes == 3);
    CHECK(result.output.text == "seen: [7] \nseen: [9] \n");
    CHECK(result.hidden_output.text == "seen: [9] [1003] \nseen: [1005] \n");
}

TEST_CASE("a submission that faults case after case has the rest run in chains of processes at once") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-fault-chains.jsonl";
    std::filesystem::remove(file);
    std::vector<CasePlan> cases =
        plans({"slowcuda-1", "slowcuda-2", "slowcuda-3", "slowcuda-4", "slowcuda-5", "slowcuda-6", "slowcuda-7",
               "slowcuda-8", "pass-9", "slowcuda-10", "leak-11", "leak-12"});
    cases[10].visibility = cases[11].visibility = Visibility::hidden;
    RunOptions options = with_tools("-fault-chains", 5.0);
    options.diagnose = false;  // the graded run's processes only
    RunTrace trace(file);
    options.trace = &trace;
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    for (const std::size_t i : {0, 1, 2, 3, 4, 5, 6, 7, 9}) {
        CHECK(result.cases[i].status == Status::cuda_error);
    }
    CHECK(result.cases[8].status == Status::passed);
    CHECK(result.cases[10].status == Status::passed);
    CHECK(result.cases[11].status == Status::passed);
    // What the hidden cases' process printed stays apart, whichever chain ran it.
    CHECK(result.output.text.find("seen:") == std::string::npos);
    CHECK(result.hidden_output.text.find("seen:") != std::string::npos);
    // Two processes in a row ended at their first case; then three chains ran at once.
    const auto processes = trace_events(file, "");
    REQUIRE(processes.size() >= 3);
    CHECK(processes[0]["first_case"] == "slowcuda-1");
    CHECK(processes[1]["first_case"] == "slowcuda-2");
    bool overlapped = false;
    for (std::size_t a = 2; a < processes.size(); ++a) {
        for (std::size_t b = a + 1; b < processes.size(); ++b) {
            const double a_start = processes[a]["at"].get<double>() - processes[a]["seconds"].get<double>();
            const double b_start = processes[b]["at"].get<double>() - processes[b]["seconds"].get<double>();
            overlapped = overlapped ||
                         (a_start < processes[b]["at"].get<double>() && b_start < processes[a]["at"].get<double>());
        }
    }
    CHECK(overlapped);
    CHECK(result.processes == static_cast<int>(processes.size()));
}

TEST_CASE("records on the result channel without the run's token are ignored and counted") {
    const RunResult result = run({"forge-1", "pass-2"});
    CHECK(result.cases[0].status == Status::wrong_answer);
    CHECK(result.cases[1].status == Status::passed);
    CHECK(result.forged_records == 2);
    CHECK(result.protections == std::vector<std::string>{"scripted: nothing to contain"});
}

TEST_CASE("a program that dies before its first case fails every case once, without restarting forever") {
    const RunResult result = run({"early-1", "pass-2"});
    CHECK(result.processes == 1);
    for (const auto& c : result.cases) {
        CHECK(c.status == Status::crashed);
        CHECK(c.detail == "the program was killed by signal 6 (SIGABRT) before running any case");
    }
}

TEST_CASE("a wrong answer the harness explains gets the explanation as its diagnosis, read as untrusted text") {
    const RunResult result = run({"explained-1", "fail-2"});
    REQUIRE(result.cases.size() == 2);
    REQUIRE(result.cases[0].diagnosis);
    const Diagnosis& diagnosis = *result.cases[0].diagnosis;
    CHECK(diagnosis.kind == "answer");
    CHECK(diagnosis.summary == "the last element is left out");
    CHECK(diagnosis.category == "the last elements left out");
    CHECK(diagnosis.scope == "this case");
    CHECK(diagnosis.topic.empty());  // not one of diagnosis_topics
    CHECK(diagnosis.evidence == std::vector<std::string>{"the total of indices 0 to 1, without index 2"});
    CHECK(diagnosis.map == std::vector<std::string>{".#", std::string(80, '#')});
    CHECK_FALSE(result.cases[1].diagnosis);
}

TEST_CASE("the trace records every harness process (its submission, tool, cases, seconds, how it ended) and case") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-trace.jsonl";
    std::filesystem::remove(file);
    std::vector<CasePlan> cases = plans({"pass-1", "crash-2", "pass-race"});
    cases[2].race_check = true;
    RunOptions options = with_tools("-trace", 5.0);
    RunTrace trace(file);
    options.trace = &trace;
    options.trace_label = "alice/sum.cu";
    run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    std::ifstream lines(file);
    std::vector<nlohmann::json> records, case_records;
    for (std::string line; std::getline(lines, line);) {
        auto record = nlohmann::json::parse(line);
        (record.contains("event") ? case_records : records).push_back(std::move(record));
    }
    // Each case its process ran, the one that crashed its process included, with its own seconds.
    REQUIRE(case_records.size() == 5);
    const std::vector<std::pair<std::string, std::string>> ran = {{"pass-1", "none"},
                                                                  {"crash-2", "none"},
                                                                  {"pass-race", "none"},
                                                                  {"pass-race", "racecheck"},
                                                                  {"crash-2", "memcheck"}};
    for (std::size_t i = 0; i < ran.size(); ++i) {
        CHECK(case_records[i]["event"] == "case");
        CHECK(case_records[i]["submission"] == "alice/sum.cu");
        CHECK(case_records[i]["case"] == ran[i].first);
        CHECK(case_records[i]["tool"] == ran[i].second);
        CHECK(case_records[i]["seconds"].get<double>() >= 0.0);
    }
    // The graded cases (the crash ends the first process), the race check, the crash's rerun under memcheck.
    REQUIRE(records.size() == 4);
    CHECK(records[0]["submission"] == "alice/sum.cu");
    CHECK(records[0]["tool"] == "none");
    CHECK(records[0]["cases"] == 3);
    CHECK(records[0]["ended"] == "was killed by signal 11 (SIGSEGV)");
    CHECK(records[1]["tool"] == "none");
    CHECK(records[1]["first_case"] == "pass-race");
    CHECK(records[2]["tool"] == "racecheck");
    CHECK(records[2]["first_case"] == "pass-race");
    CHECK(records[3]["tool"] == "memcheck");
    CHECK(records[3]["first_case"] == "crash-2");
    for (const auto& record : records) {
        CHECK(record["seconds"].get<double>() >= record["in_cases"].get<double>());
        CHECK(record["at"].get<double>() >= 0.0);
        CHECK(record["waited_before_ready"].get<double>() >= 0.0);
        CHECK(record["waited_before_ready"].get<double>() <= record["waited_for_gpu"].get<double>());
    }
}
