// The slow speed tests of a batch profiled together in rounds (counters_rounds.hpp), and which are profiled at all.
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

// Submissions of a batch graded at once on one gate of `places`, each in a thread of its own holding a place: its
// cases run, then its slow speed test (case 1) profiled as a batch profiles it. Their results, in order.
std::vector<RunResult> graded_at_once(const std::vector<std::vector<CasePlan>>& submissions, const RunOptions& options,
                                      GpuGate& gate) {
    std::vector<std::future<RunResult>> graded;
    for (std::size_t k = 0; k < submissions.size(); ++k) {
        graded.push_back(std::async(std::launch::async, [&, k] {
            const GpuGate::Place place(&gate);
            RunOptions own = options;
            own.trace_label = "student" + std::to_string(k) + "/sum.cu";
            own.work_dir = options.work_dir / ("s" + std::to_string(k));
            std::filesystem::create_directories(own.work_dir);
            RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, submissions[k], own);
            profile_case(CUGRADE_SCRIPTED_HARNESS, submissions[k], 1, own, result);
            return result;
        }));
    }
    std::vector<RunResult> results;
    for (auto& one : graded) {
        results.push_back(one.get());
    }
    return results;
}

// A batch whose slow speed tests are profiled in rounds of `places` (counters_rounds.hpp), on a gate of as many places,
// in a folder and with a trace of its own; the scripted harness's profiles read the one-block sum's counters, and no
// Nsight Compute stands by.
struct InRounds {
    InRounds(const std::string& name, std::size_t places)
        : batch(name, 5.0, 4),
          gate(GpuGate::default_patience, static_cast<unsigned>(places)),
          rounds(&gate, places, std::chrono::seconds(30), &CaseRunner::run_counters_round),
          options(batch.options),
          file(batch.file) {
        options.cupti_library = "/nonexistent/libcupti.so";  // only named in the plan: the scripted harness loads none
        options.nsight_compute.clear();
        options.environment.emplace_back("CUGRADE_STAND_IN_PROFILE",
                                         CUGRADE_TEST_DATA "/unit/data/counter-profile-one-block.json");
        options.gpu_gate = &gate;
        options.holds_gpu_place = true;
        options.counters_rounds = &rounds;
    }
    InABatch batch;
    GpuGate gate;
    CountersRounds rounds;
    RunOptions& options;
    const std::filesystem::path& file;
};

TEST_CASE("the slow speed tests of a batch are profiled together, in a round with one checker attached") {
    // Each submission's checker is declined its counters in its own turn; the two gradings wait for a round (of two),
    // in which one kept checker profiles both, and each is diagnosed from what the round read.
    InRounds batch("counters-round", 2);
    CountersRounds& rounds = batch.rounds;
    std::vector<CasePlan> cases = plans({"pass-1", "timedprofile-2"});
    cases[1].timed = true;
    const std::vector<RunResult> results = graded_at_once({cases, cases}, batch.options, batch.gate);
    for (const RunResult& result : results) {
        CHECK(result.cases[1].status == Status::passed);
        CHECK(result.cases[1].detail == "unwanted");  // declined in its turn
        REQUIRE(result.cases[1].diagnosis);
        CHECK(result.cases[1].diagnosis->summary.find("one_block_sum runs 1 block") != std::string::npos);
        CHECK(result.diagnosis_notes.empty());
        CHECK(result.seconds.round_wait > 0.0);
    }
    CHECK(rounds.rounds() == 1);
    CHECK(rounds.requests() == 2);
    const std::vector<nlohmann::json> round = trace_events(batch.file, "counters_round");
    REQUIRE(round.size() == 1);
    CHECK(round[0]["jobs"] == 2);
    CHECK(round[0]["checkers"] == 1);
    CHECK(round[0]["failed"] == 0);
    CHECK(trace_events(batch.file, "counters_job").size() == 2);
    const std::vector<nlohmann::json> counters = trace_events(batch.file, "counters");
    REQUIRE(counters.size() == 2);
    CHECK(counters[0]["in_round"] == true);
}

TEST_CASE("a slow speed test graded alone is profiled after its cases, in a round of its own") {
    // As `cugrade check` grades: no batch, no gate, no kept checkers. The graded process makes no profile; a checker
    // started for it afterwards does, and the diagnosis comes from it.
    InRounds alone("counters-round-alone", 1);
    alone.options.gpu_gate = nullptr;
    alone.options.holds_gpu_place = false;
    alone.options.counters_rounds = nullptr;
    alone.options.checker_pool = nullptr;
    std::vector<CasePlan> cases = plans({"pass-1", "timedprofile-2", "pass-3"});
    cases[1].timed = true;
    RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, alone.options);
    CHECK(result.cases[1].detail == "unwanted");
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 1, alone.options, result);
    REQUIRE(result.cases[1].diagnosis);
    CHECK(result.cases[1].diagnosis->summary.find("one_block_sum runs 1 block") != std::string::npos);
    const std::vector<nlohmann::json> round = trace_events(alone.file, "counters_round");
    REQUIRE(round.size() == 1);
    CHECK(round[0]["jobs"] == 1);
    CHECK(round[0]["checkers"] == 1);
}

TEST_CASE("a job that ends its round's checker leaves the next job a fresh checker, and says why it has no profile") {
    InRounds batch("counters-round-fault", 3);
    std::vector<CasePlan> crashing = plans({"pass-1", "timedprofilecrash-2"});
    std::vector<CasePlan> profiled = plans({"pass-1", "timedprofile-2"});
    crashing[1].timed = profiled[1].timed = true;
    // Its own run passes the crashing one's speed test: only the round's call faults.
    const std::vector<RunResult> results = graded_at_once({profiled, crashing, profiled}, batch.options, batch.gate);
    CHECK(results[0].cases[1].diagnosis);
    CHECK(results[2].cases[1].diagnosis);
    CHECK(!results[1].cases[1].diagnosis);
    CHECK(results[1].cases[1].status == Status::passed);
    CHECK(results[1].diagnosis_notes ==
          std::vector<std::string>{"the speed test could not be profiled: the profiling checker ended"});
    const std::vector<nlohmann::json> round = trace_events(batch.file, "counters_round");
    REQUIRE(round.size() == 1);
    CHECK(round[0]["jobs"] == 3);
    CHECK(round[0]["failed"] == 1);
    // A fresh checker after the fault, where a job came after it.
    const std::vector<nlohmann::json> jobs = trace_events(batch.file, "counters_job");
    REQUIRE(jobs.size() == 3);
    const bool crash_last = jobs.back()["profiled"] == false;
    CHECK(round[0]["checkers"] == (crash_last ? 1 : 2));
}

TEST_CASE("a speed test after a race, or after a case set aside as seeming to hang, is not profiled") {
    using namespace std::chrono_literals;
    RunOptions options = with_tools("-counters-race-first", 5.0);
    options.cupti_library = "/nonexistent/libcupti.so";  // only named in the plan: the scripted harness loads nothing
    GpuGate gate(200ms);
    options.gpu_gate = &gate;
    SECTION("a race is found after the graded run, before the profile it spares") {
        // As `cugrade check` grades: the speed test's profile waits for a round after every case's verdict.
        InRounds alone("counters-race-after", 1);
        alone.options.gpu_gate = nullptr;
        alone.options.holds_gpu_place = false;
        alone.options.counters_rounds = nullptr;
        alone.options.checker_pool = nullptr;
        std::vector<CasePlan> cases = plans({"pass-1", "timedprofile-2", "pass-race", "racy-17"});
        cases[1].timed = true;
        cases[2].race_check = true;  // two, so that they run under one racecheck with the harness's markers
        cases[3].race_check = true;
        RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, alone.options);
        CHECK(result.cases[3].status == Status::race);
        CHECK(result.cases[1].detail == "unwanted");  // left to the round
        profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 1, alone.options, result);
        CHECK(!result.cases[1].diagnosis);
        CHECK(result.diagnosis_notes ==
              std::vector<std::string>{"the speed test was not profiled: a smaller case failed; it is profiled "
                                       "once every smaller case passes"});
        CHECK(trace_events(alone.file, "counters_round").empty());
    }
    SECTION("a case set aside has no verdict yet, and counts as failed") {
        std::vector<CasePlan> cases = plans({"hang-1", "timedprofile-2"});
        cases[0].case_seconds = 3.0;
        cases[1].timed = true;
        auto graded =
            std::async(std::launch::async, [&] { return run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options); });
        REQUIRE(wait_until([&] { return gate.shared_holders() == 1; }));  // the hang holds the GPU shared
        {
            GpuGate::Hold speed_test(&gate);
            speed_test.change(GpuGate::Use::exclusive);  // the hang is set aside
        }
        gate.nothing_left_to_start();
        const RunResult result = graded.get();
        CHECK(result.cases[0].status == Status::timed_out);
        CHECK(result.cases[1].detail == "unwanted");
    }
}

TEST_CASE("a slow speed test is profiled only when every smaller case passed, and says so when one failed") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-unwanted.jsonl";
    std::filesystem::remove(file);
    std::vector<CasePlan> cases = plans({"pass-1", "fail-2", "timed-3"});
    cases[2].timed = true;
    RunOptions options = with_tools("-unwanted", 5.0);
    RunTrace trace(file);
    options.trace = &trace;
    RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    REQUIRE(result.cases[1].status == Status::wrong_answer);
    REQUIRE(result.cases[2].status == Status::passed);
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 2, options, result);
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 2, options, result);
    CHECK(result.diagnosis_notes ==
          std::vector<std::string>{"the speed test was not profiled: a smaller case failed; it is profiled once "
                                   "every smaller case passes"});
    CHECK(!result.cases[2].diagnosis);
    CHECK(trace_events(file, "profile").empty());                           // no Nsight Compute either
    CHECK(!smaller_case_failed(cases, result.cases, {true, false, true}));  // only decided cases count
    CHECK(smaller_case_failed(cases, result.cases, {true, true, false}));
    // Where the grader could not run a case (no compute-sanitizer for a race check), the submission failed nothing.
    result.cases[1].status = Status::harness_error;
    CHECK(!smaller_case_failed(cases, result.cases, {true, true, true}));
}
