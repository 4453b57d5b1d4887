// A passed speed test profiled: by Nsight Compute (a stand-in) or by the checker's own counters, each taking the
// machine's turn at the GPU's counters, and what the trace says of it.
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

TEST_CASE("a profile with no figures, or none at all, is left out with why, not the profiler's note on the clocks") {
    // Its kernel listed with every figure "nan": nothing to say of where the time went, and no "0 GB/s" said either.
    const RunResult nan = profiled_by("ncu_stand_in_nan.sh", "-profile-nan");
    CHECK(nan.cases[0].status == Status::passed);
    CHECK_FALSE(nan.cases[0].diagnosis);
    CHECK(nan.diagnosis_notes ==
          std::vector<std::string>{
              "the speed test could not be profiled: Nsight Compute measured no time in the submission's kernels"});
    const RunResult none = profiled_by("ncu_stand_in_warns.sh", "-profile-warns");
    CHECK_FALSE(none.cases[0].diagnosis);
    CHECK(none.diagnosis_notes ==
          std::vector<std::string>{"the speed test could not be profiled: Nsight Compute "
                                   "exited with code 0: ==WARNING== No kernels were profiled."});
}

TEST_CASE("a profile that fails as Nsight Compute does beside other processes is tried once more") {
    const RunResult result = profiled_by("ncu_stand_in_flaky.sh", "-profile-flaky");
    CHECK(result.diagnosis_notes.empty());
    REQUIRE(result.cases[0].diagnosis);
    CHECK(result.cases[0].diagnosis->summary.rfind("Nsight Compute: the kernels moved 1000 MB at 1000 GB/s", 0) == 0);
}

TEST_CASE("a profile that never ends is stopped at its bound, gives the counters back, and the grading goes on") {
    std::vector<CasePlan> cases = plans({"toolhang-timed"});
    cases[0].timed = true;
    cases[0].case_seconds = 10.0;
    GpuGate gate;
    RunOptions options = with_tools("-profile", 1.5);
    options.gpu_gate = &gate;
    RunResult result;
    result.cases.resize(1);
    result.cases[0].status = Status::passed;
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    REQUIRE(result.diagnosis_notes.size() == 1);
    CHECK(result.diagnosis_notes[0] == "the speed test could not be profiled: Nsight Compute stopped after 1.5 s");
    CHECK(result.cases[0].status == Status::passed);
    // The profiled call held the GPU alone and the machine's counters: both are free again.
    CHECK_FALSE(gate.exclusive_held());
    CHECK(gate.exclusive_seconds() > 1.0);
    CHECK(MachineLock(std::filesystem::temp_directory_path() / "cugrade-gpu-counters.lock", std::chrono::seconds(0))
              .held());
    // The next profile gets its turn, and is stopped at its own bound, not refused the counters.
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    REQUIRE(result.diagnosis_notes.size() == 2);
    CHECK(result.diagnosis_notes[1] == result.diagnosis_notes[0]);
}

TEST_CASE("the trace says why a speed test was profiled under Nsight Compute: what the checker's counters said") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-profile-trace.jsonl";
    std::filesystem::remove(file);
    std::vector<CasePlan> cases = plans({"timed-1"});
    cases[0].timed = true;
    RunOptions options = with_tools("-profile-trace", 5.0);
    RunTrace trace(file);
    options.trace = &trace;
    options.trace_label = "alice/sum.cu";
    RunResult result;
    result.cases.resize(1);
    result.cases[0].status = Status::passed;
    result.cases[0].measurements = {
        {"kernel_profile", {{"problem", "cuptiRangeProfilerStart failed: CUPTI_ERROR_UNKNOWN"}}}};
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    result.cases[0].measurements = nlohmann::json::object();
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    // Declined while a smaller case was set aside, which then passed: the profile is wanted after all.
    result.cases[0].measurements = {{"kernel_profile", {{"unwanted", true}}}};
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    const std::vector<nlohmann::json> profiles = trace_events(file, "profile");
    REQUIRE(profiles.size() == 3);
    CHECK(profiles[2]["why"] == "the checker was declined its counters while a smaller case waited to run again");
    CHECK(profiles[0]["submission"] == "alice/sum.cu");
    CHECK(profiles[0]["case"] == "timed-1");
    CHECK(profiles[0]["status"] == "passed");
    CHECK(profiles[0]["why"] == "cuptiRangeProfilerStart failed: CUPTI_ERROR_UNKNOWN");
    CHECK(profiles[1]["why"] == "the harness read no counters");
}

TEST_CASE("the trace says what held the GPU alone, and what each of the checker's own profiles cost step by step") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-alone-trace.jsonl";
    std::filesystem::remove(file);
    std::vector<CasePlan> cases = plans({"pass-1", "timed-2"});
    cases[1].timed = true;
    RunOptions options = with_tools("-alone-trace", 5.0);
    GpuGate gate;
    options.gpu_gate = &gate;
    RunTrace trace(file);
    options.trace = &trace;
    options.trace_label = "alice/sum.cu";
    RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    REQUIRE(result.cases[1].status == Status::passed);
    result.cases[1].measurements = {{"kernel_profile",
                                     {{"launches", nlohmann::json::array()},
                                      {"passes", 5},
                                      {"setup_seconds", 0.25},
                                      {"seconds", 0.5},
                                      {"steps", {{"availability", 0.2}, {"warm-up", 0.3}, {"passes", 0.05}}}}}};
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 1, options, result);
    const std::vector<nlohmann::json> alone = trace_events(file, "alone");
    const std::vector<nlohmann::json> counters = trace_events(file, "counters");
    REQUIRE(alone.size() == 1);
    CHECK(alone[0]["case"] == "timed-2");
    CHECK(alone[0]["counters"] == false);
    REQUIRE(counters.size() == 1);
    CHECK(counters[0]["submission"] == "alice/sum.cu");
    CHECK(counters[0]["case"] == "timed-2");
    CHECK(counters[0]["passes"] == 5);
    CHECK(counters[0]["seconds"] == 0.5);
    CHECK(counters[0]["steps"]["warm-up"] == 0.3);
}

TEST_CASE("a profile whose turn does not come in time is left out with a note, and holds nothing") {
    std::vector<CasePlan> cases = plans({"timed-1"});
    cases[0].timed = true;
    RunOptions options = with_tools("-profile-turn", 5.0);
    options.profile_wait_seconds = 0.5;
    GpuGate gate;
    const bool in_batch = GENERATE(false, true);
    options.gpu_gate = in_batch ? &gate : nullptr;
    RunResult result;
    result.cases.resize(1);
    result.cases[0].status = Status::passed;
    {
        const MachineLock another_profile(std::filesystem::temp_directory_path() / "cugrade-gpu-counters.lock");
        profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);  // gives up: a hang would not end
    }
    REQUIRE(result.diagnosis_notes.size() == 1);
    CHECK(result.diagnosis_notes[0] ==
          std::string(
              "the speed test was not profiled: other profiles held the GPU's counters for 0.5 s (they take turns "
              "on a machine)") +
              (in_batch ? "; `cugrade check` of this submission waits for its turn and profiles it" : ""));
    CHECK(result.seconds.gpu_wait >= 0.5);
    CHECK_FALSE(result.cases[0].diagnosis);
}

TEST_CASE("a checker reading the GPU's counters takes the machine's turn at them, and gives it back with its case") {
    RunOptions options = with_tools("-counters-turn", 5.0);
    options.cupti_library = "/nonexistent/libcupti.so";  // only named in the plan: the scripted harness loads nothing
    options.profile_wait_seconds = 0.5;
    const auto lock_file = std::filesystem::temp_directory_path() / "cugrade-gpu-counters.lock";
    {
        const MachineLock another_profile(lock_file);
        const RunResult refused = run_cases(CUGRADE_SCRIPTED_HARNESS, plans({"counters-1"}), options);
        CHECK(refused.cases[0].detail == "refused");
        CHECK(refused.seconds.gpu_wait >= 0.5);
    }
    const RunResult granted = run_cases(CUGRADE_SCRIPTED_HARNESS, plans({"counters-1", "counters-2"}), options);
    CHECK(granted.cases[0].detail == "granted");
    CHECK(granted.cases[1].detail == "granted");  // the first case's turn ended with it
    CHECK(MachineLock(lock_file, std::chrono::seconds(0)).held());
}

TEST_CASE("a speed test's profile takes the counters in its turn at the GPU alone only if they are free at once") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-counters-try.jsonl";
    std::filesystem::remove(file);
    RunOptions options = with_tools("-counters-try", 5.0);
    options.cupti_library = "/nonexistent/libcupti.so";  // only named in the plan: the scripted harness loads nothing
    options.profile_wait_seconds = 60.0;
    GpuGate gate;
    options.gpu_gate = &gate;
    RunTrace trace(file);
    options.trace = &trace;
    std::vector<CasePlan> cases = plans({"timedprofile-1"});
    cases[0].timed = true;
    const auto lock_file = std::filesystem::temp_directory_path() / "cugrade-gpu-counters.lock";
    {
        const MachineLock another_profile(lock_file);
        const RunResult refused = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
        CHECK(refused.cases[0].detail == "refused");
        // Refused at once: it did not wait for the profiles' patience, which would be all the wait there is.
        CHECK(refused.seconds.gpu_wait < options.profile_wait_seconds);
    }
    const RunResult granted = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    CHECK(granted.cases[0].detail == "granted");
    CHECK(MachineLock(lock_file, std::chrono::seconds(0)).held());
    const std::vector<nlohmann::json> alone = trace_events(file, "alone");
    REQUIRE(alone.size() == 2);
    CHECK(alone[0]["counters"] == false);
    CHECK(alone[1]["counters"] == true);  // the speed test's turn, which its profile shared
    CHECK(alone[1]["counters_from_start"] == false);
}

TEST_CASE("a speed test after a failed smaller case is not profiled: its request for the counters is declined") {
    RunOptions options = with_tools("-counters-unwanted", 5.0);
    options.cupti_library = "/nonexistent/libcupti.so";  // only named in the plan: the scripted harness loads nothing
    GpuGate gate;
    options.gpu_gate = &gate;
    const bool smaller_failed = GENERATE(false, true);
    std::vector<CasePlan> cases = plans({smaller_failed ? "fail-1" : "pass-1", "timedprofile-2", "fail-3"});
    cases[1].timed = true;
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    // A case failing after it (a hidden one, say) is not known yet: the rule is applied again once all have run.
    CHECK(result.cases[1].detail == (smaller_failed ? "unwanted" : "granted"));
    CHECK(result.cases[1].status == Status::passed);
    // Declined, the machine's counters were never taken; granted, they were given back with the case.
    CHECK(MachineLock(std::filesystem::temp_directory_path() / "cugrade-gpu-counters.lock", std::chrono::seconds(0))
              .held());
}

TEST_CASE("a speed test of code profiled before in the batch reads no counters, and is diagnosed from those") {
    // Two submissions whose files differ only in their comments (same_code.hpp): the first's checker reads the
    // counters; the second's is declined them, and its diagnosis comes from the first's counters.
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-same-code.jsonl";
    std::filesystem::remove(file);
    RunOptions options = with_tools("-same-code", 5.0);
    options.cupti_library = "/nonexistent/libcupti.so";  // only named in the plan: the scripted harness loads nothing
    GpuGate gate;
    options.gpu_gate = &gate;
    RunTrace trace(file);
    options.trace = &trace;
    SameCodeProfiles profiles;
    options.same_code_profiles = &profiles;
    options.same_code = "sum\nrubric.yaml\n__global__ void one_block_sum(const float* in, std::size_t n, float* out);";
    std::vector<CasePlan> cases = plans({"pass-1", "timedprofile-2"});
    cases[1].timed = true;
    options.trace_label = "alice/sum.cu";
    RunResult first = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    REQUIRE(first.cases[1].detail == "granted");
    // What its checker read: the one-block sum fixture's counters, as an H100 read them.
    std::ifstream read(std::string(CUGRADE_TEST_DATA) + "/unit/data/counter-profile-one-block.json");
    first.cases[1].measurements = {{"kernel_profile", {{"launches", nlohmann::json::parse(read)}}}};
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 1, options, first);
    REQUIRE(first.cases[1].diagnosis);
    CHECK(first.cases[1].diagnosis->summary.find("one_block_sum runs 1 block") != std::string::npos);

    options.trace_label = "bob/sum.cu";
    RunResult second = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
    CHECK(second.cases[1].detail == "unwanted");
    CHECK(second.cases[1].status == Status::passed);
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 1, options, second);
    REQUIRE(second.cases[1].diagnosis);
    CHECK(second.cases[1].diagnosis->summary == first.cases[1].diagnosis->summary);
    CHECK(second.diagnosis_notes.empty());
    const std::vector<nlohmann::json> reused = trace_events(file, "counters_of_same_code");
    REQUIRE(reused.size() == 1);
    CHECK(reused[0]["submission"] == "bob/sum.cu");
    CHECK(reused[0]["case"] == "timedprofile-2");

    // Other code reads its own.
    options.same_code += "\n";
    CHECK(run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options).cases[1].detail == "granted");
}

TEST_CASE(
    "a checker refused its turn at the counters leaves the profile out, without asking Nsight Compute to wait again") {
    std::vector<CasePlan> cases = plans({"timed-1"});
    cases[0].timed = true;
    RunOptions options = with_tools("-turn-refused", 5.0);
    options.profile_wait_seconds = 5.0;
    GpuGate gate;
    options.gpu_gate = &gate;
    RunResult result;
    result.cases.resize(1);
    result.cases[0].status = Status::passed;
    result.cases[0].measurements = {
        {"kernel_profile", {{"problem", "other profiles held the GPU's counters"}, {"turn_refused", true}}}};
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    CHECK(result.processes == 0);  // no Nsight Compute was started to wait for the counters
    REQUIRE(result.diagnosis_notes.size() == 1);
    CHECK(result.diagnosis_notes[0] ==
          "the speed test was not profiled: other profiles held the GPU's counters for 5 s (they take turns on a "
          "machine); `cugrade check` of this submission waits for its turn and profiles it");
    CHECK_FALSE(result.cases[0].diagnosis);
}
