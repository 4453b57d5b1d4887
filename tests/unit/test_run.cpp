// The run loop against a scripted harness: every kind of failure lands on its own case, the others still run.
#include "catch.hpp"
#include "cugrade/run.hpp"

#include <filesystem>

namespace {

using namespace cugrade;

std::vector<CasePlan> plans(const std::vector<std::string>& ids) {
    std::vector<CasePlan> cases;
    for (const auto& id : ids) {
        CasePlan plan;
        plan.id = id;
        plan.group = "g";
        plan.input = {"positive", "uniform", 0.0, 1.0};
        plan.case_seconds = 1.0;
        cases.push_back(plan);
    }
    return cases;
}

RunResult run_plans(const std::vector<CasePlan>& cases) {
    const auto dir = std::filesystem::temp_directory_path() / "cugrade-test-run";
    std::filesystem::create_directories(dir);
    RunOptions options;
    options.work_dir = dir;
    options.startup_seconds = 5.0;
    return run_cases(CUGRADE_SCRIPTED_HARNESS, cases, Rubric{}, options);
}

RunResult run(const std::vector<std::string>& ids) { return run_plans(plans(ids)); }

}  // namespace

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

TEST_CASE("what the program prints never counts as a result") {
    const RunResult result = run({"noisy-1", "pass-2"});
    CHECK(result.cases[0].status == Status::wrong_answer);
    CHECK(result.cases[1].status == Status::passed);
    CHECK(result.output.text.find("\"status\":\"passed\"") != std::string::npos);
}

TEST_CASE("hidden cases run in processes of their own, whose output is kept apart") {
    // A submission may keep a hidden case's size in a static and print it during a later visible case: the visible
    // cases' processes never see a hidden input.
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
    CHECK(result.output.text == "seen: [7] \nseen: [7] [9] \n");
    CHECK(result.hidden_output.text == "seen: [4194304] \nseen: [4194304] [8388608] \n");
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

TEST_CASE("the first racecheck hazard becomes one line") {
    // As compute-sanitizer 2025.3 printed it for tests/fixtures/sum/missing_syncthreads on an H100.
    const std::string output =
        "========= COMPUTE-SANITIZER\n"
        "========= Error: Potential RAW hazard detected at __shared__ 0x580 in block (2,0,0) :\n"
        "=========     Write Thread (96,0,0) at partial_sums(const float *, unsigned long, float *)+0x2f0 in sum.cu:16\n"
        "=========     Read Thread (32,0,0) at partial_sums(const float *, unsigned long, float *)+0x2d0 in sum.cu:16\n"
        "=========     Current Value : 0\n"
        "=========     Saved host backtrace up to driver entry point at kernel launch time\n";
    CHECK(first_race_report(output) ==
          "Potential RAW hazard detected at __shared__ 0x580 in block (2,0,0): "
          "Write Thread (96,0,0) at partial_sums(const float *, unsigned long, float *) in sum.cu:16; "
          "Read Thread (32,0,0) at partial_sums(const float *, unsigned long, float *) in sum.cu:16");
    CHECK(first_race_report("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n").empty());
}
