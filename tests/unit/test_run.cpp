// The run loop against a scripted harness: every kind of failure lands on its own case, the others still run.
#include "catch.hpp"
#include "fresh_folder.hpp"
#include "case_runner.hpp"
#include "checker_pool.hpp"
#include "counters_rounds.hpp"
#include "cugrade/run.hpp"
#include "machine_lock.hpp"
#include "same_code_profiles.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <filesystem>
#include <future>
#include <thread>

namespace {

using namespace cugrade;

std::vector<CasePlan> plans(const std::vector<std::string>& ids) {
    std::vector<CasePlan> cases;
    for (const auto& id : ids) {
        CasePlan plan;
        plan.id = id;
        plan.group = "g";
        plan.inputs = {{{"positive", "uniform", 0.0, 1.0}, 0}};
        plan.case_seconds = 1.0;
        cases.push_back(plan);
    }
    return cases;
}

RunResult run_plans(const std::vector<CasePlan>& cases, GpuGate* gate = nullptr, const std::string& folder = "") {
    const auto dir = std::filesystem::temp_directory_path() / ("cugrade-test-run" + folder);
    std::filesystem::create_directories(dir);
    RunOptions options;
    options.work_dir = dir;
    options.startup_seconds = 5.0;
    options.gpu_gate = gate;
    return run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
}

// A run of the scripted harness on a shared GPU, in a thread of its own (each in a folder of its own).
std::future<RunResult> run_beside(const std::vector<std::string>& ids, GpuGate& gate, const std::string& folder) {
    return std::async(std::launch::async, [ids, &gate, folder] { return run_plans(plans(ids), &gate, folder); });
}

bool still_running(const std::future<RunResult>& run, std::chrono::milliseconds wait) {
    return run.wait_for(wait) == std::future_status::timeout;
}

RunResult run(const std::vector<std::string>& ids) { return run_plans(plans(ids)); }

// Options whose compute-sanitizer and Nsight Compute are a stand-in that runs the program as they would, in a
// folder of its own.
RunOptions with_tools(const std::string& folder, double diagnosis_seconds) {
    const auto dir = std::filesystem::temp_directory_path() / ("cugrade-test-run" + folder);
    std::filesystem::create_directories(dir);
    RunOptions options;
    options.work_dir = dir;
    options.startup_seconds = 5.0;
    options.compute_sanitizer = CUGRADE_TEST_DATA "/unit/tool_stand_in.sh";
    options.nsight_compute = CUGRADE_TEST_DATA "/unit/tool_stand_in.sh";
    options.diagnosis_seconds = diagnosis_seconds;
    return options;
}

// As a batch grades, in a folder and with a trace of its own (`name`): the submission's runner and device code
// handed to the checker, kept checkers from a pool of `idle` (16 jobs each).
struct InABatch {
    InABatch(const std::string& name, double diagnosis_seconds, std::size_t idle)
        : file(fresh_trace_file(name)),
          trace(file),
          pool(std::make_unique<CheckerPool>(nullptr, idle, 16)),
          options(with_tools("-" + name, diagnosis_seconds)) {
        options.runner = CUGRADE_TEST_DATA "/unit/runner_stand_in.sh";
        options.device_code = CUGRADE_TEST_DATA "/unit/runner_stand_in.sh";  // any file: the scripted harness reads none
        options.shared_program = CUGRADE_SCRIPTED_HARNESS;
        options.trace = &trace;
        options.checker_pool = pool.get();
    }
    static std::filesystem::path fresh_trace_file(const std::string& name) {
        const auto file = std::filesystem::temp_directory_path() / ("cugrade-test-run-" + name + ".jsonl");
        std::filesystem::remove(file);
        return file;
    }
    std::filesystem::path file;
    RunTrace trace;
    std::unique_ptr<CheckerPool> pool;
    RunOptions options;
};

// Cases that are all race-checked.
std::vector<CasePlan> race_checked(const std::vector<std::string>& ids) {
    std::vector<CasePlan> cases = plans(ids);
    for (auto& c : cases) {
        c.race_check = true;
    }
    return cases;
}

// A passed speed test profiled by `profiler`, a stand-in for Nsight Compute in tests/unit/, in a folder of its own.
RunResult profiled_by(const std::string& profiler, const std::string& folder) {
    std::vector<CasePlan> cases = plans({"timed-1"});
    cases[0].timed = true;
    RunOptions options = with_tools(folder, 5.0);
    options.nsight_compute = std::string(CUGRADE_TEST_DATA "/unit/") + profiler;
    std::filesystem::remove(options.work_dir / "profile.csv.tried");  // the flaky stand-in's mark of its first run
    RunResult result;
    result.cases.resize(1);
    result.cases[0].status = Status::passed;
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    return result;
}

// The records of a run trace with the given "event"; "": the processes' own, which have none.
std::vector<nlohmann::json> trace_events(const std::filesystem::path& file, const std::string& event) {
    std::ifstream lines(file);
    std::vector<nlohmann::json> found;
    for (std::string line; std::getline(lines, line);) {
        if (auto record = nlohmann::json::parse(line); record.value("event", "") == event) {
            found.push_back(std::move(record));
        }
    }
    return found;
}

// How each racecheck process and kept job of a trace ended, in order, and the case each began with.
std::vector<std::pair<std::string, std::string>> racecheck_runs(const std::filesystem::path& file) {
    std::vector<std::pair<std::string, std::string>> runs;
    for (const auto& record : trace_events(file, "")) {
        if (record["tool"] == "racecheck") {
            runs.emplace_back(record["ended"], record["first_case"]);
        }
    }
    return runs;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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
    const auto [result, reruns] = graded_in_fresh_folder({"trap-1", "trap-2", "trap-3", "cuda-4", "pass-5"}, "traps",
                                                         "launch_failure_rerun");
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
    std::vector<CasePlan> cases = plans({"slowcuda-1", "slowcuda-2", "slowcuda-3", "slowcuda-4", "slowcuda-5",
                                         "slowcuda-6", "slowcuda-7", "slowcuda-8", "pass-9", "slowcuda-10", "leak-11",
                                         "leak-12"});
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
            overlapped = overlapped || (a_start < processes[b]["at"].get<double>() &&
                                        b_start < processes[a]["at"].get<double>());
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

TEST_CASE("on a shared GPU a case waits while a speed test has the GPU alone, and the wait is not the case's time") {
    using namespace std::chrono_literals;
    GpuGate gate;
    GpuGate::Hold speed_test(&gate);
    speed_test.change(GpuGate::Use::exclusive);
    auto run = run_beside({"pass-1", "fail-2"}, gate, "-waits");
    CHECK(still_running(run, 1500ms));  // longer than the case's 1 s
    speed_test.change(GpuGate::Use::none);
    const RunResult result = run.get();
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::wrong_answer);
    CHECK(gate.shared_holders() == 0);
}

TEST_CASE("a speed test waits for the cases running now, and no new case starts before it") {
    using namespace std::chrono_literals;
    GpuGate gate(2s, 1, 2s);  // what runs is let past only after 2 s
    GpuGate::Hold running_case(&gate);
    running_case.change(GpuGate::Use::shared);
    auto speed = run_beside({"timed-1"}, gate, "-speed");
    CHECK(still_running(speed, 500ms));
    CHECK_FALSE(gate.exclusive_held());
    // Another submission's case, asking after the speed test did, waits for it.
    auto later_case = std::async(std::launch::async, [&gate] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::shared);
        return true;
    });
    CHECK(later_case.wait_for(300ms) == std::future_status::timeout);
    running_case.change(GpuGate::Use::none);
    CHECK(speed.get().cases[0].status == Status::passed);
    CHECK(later_case.get());
    CHECK(gate.exclusive_seconds() > 0.0);
    CHECK(gate.exclusive_grants() == 1);
    CHECK(gate.emptying_seconds() > 0.5);  // the running case kept the GPU about 0.8 s after the speed test asked
    CHECK_FALSE(gate.exclusive_held());
}

TEST_CASE("cases of several submissions share the GPU, and a crash gives back what its process held") {
    GpuGate gate;
    auto first = run_beside({"pass-1", "crash-2", "pass-3"}, gate, "-first");
    auto second = run_beside({"pass-1", "hang-2", "pass-3"}, gate, "-second");
    const RunResult a = first.get(), b = second.get();
    CHECK(a.cases[1].status == Status::crashed);
    CHECK(b.cases[1].status == Status::timed_out);
    CHECK(a.cases[2].status == Status::passed);
    CHECK(b.cases[2].status == Status::passed);
    CHECK(gate.shared_holders() == 0);
    CHECK_FALSE(gate.exclusive_held());
}

TEST_CASE("a process that ends while it holds the GPU gives it back") {
    GpuGate gate;
    const RunResult result = run_plans(plans({"timed-1", "crash-2", "timed-3"}), &gate, "-ends");
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::crashed);
    CHECK(result.cases[2].status == Status::passed);
    GpuGate::Hold after(&gate);
    after.change(GpuGate::Use::exclusive);  // would wait forever if anything were still held
    CHECK(gate.exclusive_held());
}

TEST_CASE("work that holds a shared GPU for long does not keep others out while a speed test waits for it") {
    using namespace std::chrono_literals;
    GpuGate gate(200ms);
    GpuGate::Hold hanging(&gate);
    hanging.change(GpuGate::Use::shared);
    auto speed_test = std::async(std::launch::async, [&gate] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::exclusive);
        return true;
    });
    std::this_thread::sleep_for(300ms);
    {
        GpuGate::Hold other(&gate);
        other.change(GpuGate::Use::shared);  // let in: all that runs has run past the patience
        CHECK(gate.shared_holders() == 2);
    }
    CHECK(speed_test.wait_for(100ms) == std::future_status::timeout);
    hanging.change(GpuGate::Use::none);
    CHECK(speed_test.get());
}

TEST_CASE("a case that ran long before a speed test asked lets new cases in, and those let in let in no more") {
    using namespace std::chrono_literals;
    GpuGate gate(2s, 1, 300ms);
    GpuGate::Hold long_case(&gate);
    long_case.change(GpuGate::Use::shared);
    auto speed_test = std::async(std::launch::async, [&gate] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::exclusive);
        return true;
    });
    std::this_thread::sleep_for(100ms);
    // Asked while the long case had held the GPU 0.1 s: waits until it has held it past 0.3 s.
    const auto asked = std::chrono::steady_clock::now();
    GpuGate::Hold let_in(&gate);
    let_in.change(GpuGate::Use::shared);
    const double waited = seconds_since(asked);
    CHECK(waited > 0.15);
    CHECK(waited < 1.0);
    long_case.change(GpuGate::Use::none);
    // The case let in has held the GPU past 0.3 s too, but it came after the speed test asked: no one else gets in.
    std::this_thread::sleep_for(400ms);
    auto later_case = std::async(std::launch::async, [&gate] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::shared);
        return true;
    });
    CHECK(later_case.wait_for(300ms) == std::future_status::timeout);
    CHECK(speed_test.wait_for(10ms) == std::future_status::timeout);
    let_in.change(GpuGate::Use::none);
    CHECK(speed_test.get());
    CHECK(later_case.get());
}

TEST_CASE("a case that seems to hang while a speed test waits is set aside, and runs again with its whole limit") {
    using namespace std::chrono_literals;
    GpuGate gate(200ms);
    std::vector<CasePlan> cases = plans({"hang-1", "pass-2"});
    cases[0].case_seconds = 6.0;
    auto hanging = std::async(std::launch::async, [&] { return run_plans(cases, &gate, "-set-aside"); });
    std::this_thread::sleep_for(300ms);  // the hang holds the GPU shared by now
    const auto asked = std::chrono::steady_clock::now();
    GpuGate::Hold speed_test(&gate);
    speed_test.change(GpuGate::Use::exclusive);
    CHECK(seconds_since(asked) < 5.0);  // before the hang's limit: it was stopped
    CHECK(still_running(hanging, 0ms));  // its case waits for a quiet GPU
    speed_test.change(GpuGate::Use::none);
    const RunResult result = hanging.get();
    CHECK(result.cases[0].status == Status::timed_out);  // as alone, after its whole limit
    CHECK(result.cases[1].status == Status::passed);
    CHECK(result.processes == 3);  // stopped; the case after it; the case set aside, again
    CHECK(gate.quiet_rounds() == 1);
    CHECK(gate.shared_holders() == 0);
}

TEST_CASE("cases set aside run again side by side, each in its own process: their limits are not added up") {
    using namespace std::chrono_literals;
    GpuGate gate(200ms);
    gate.take_place();  // another student, graded until the speed tests are done and a while after
    std::vector<CasePlan> cases = plans({"hang-1", "hang-2", "pass-3"});
    cases[0].case_seconds = 6.0;
    cases[1].case_seconds = 6.0;
    auto hanging = std::async(std::launch::async, [&] { return run_plans(cases, &gate, "-side-by-side"); });
    for (int hang = 0; hang < 2; ++hang) {
        std::this_thread::sleep_for(500ms);  // the hang holds the GPU shared by now
        GpuGate::Hold speed_test(&gate);
        speed_test.change(GpuGate::Use::exclusive);  // granted once the hang was stopped and set aside
    }
    std::this_thread::sleep_for(1500ms);
    const auto quiet_from = std::chrono::steady_clock::now();
    gate.give_place();  // the GPU is quiet now
    const RunResult result = hanging.get();
    CHECK(seconds_since(quiet_from) < 10.0);  // the two limits of 6 s at once, not one after the other
    // The wait for the quiet GPU is a wait of its own, not one for the GPU, nor a stage's time.
    CHECK(result.seconds.quiet_wait >= 0.5);
    CHECK(result.seconds.gpu_wait < result.seconds.quiet_wait);
    CHECK(result.cases[0].status == Status::timed_out);
    CHECK(result.cases[1].status == Status::timed_out);
    CHECK(result.cases[2].status == Status::passed);
    CHECK(result.processes == 5);  // two stopped; the case after them; the two set aside, again
    CHECK(gate.quiet_rounds() == 1);
    CHECK(gate.shared_holders() == 0);
}

TEST_CASE("work set aside waits until every student graded on the GPU waits too, then takes a place again") {
    using namespace std::chrono_literals;
    GpuGate gate(2s, 2);
    gate.take_place();
    gate.take_place();
    auto third = std::async(std::launch::async, [&gate] { gate.take_place(); });
    CHECK(third.wait_for(200ms) == std::future_status::timeout);  // two places, both taken
    auto set_aside = std::async(std::launch::async, [&gate] { return gate.wait_until_quiet(true); });
    third.get();  // the place given up while it waits
    CHECK(set_aside.wait_for(200ms) == std::future_status::timeout);  // two students still graded
    gate.give_place();
    CHECK(set_aside.wait_for(200ms) == std::future_status::timeout);
    gate.give_place();
    CHECK(set_aside.get() > 0.3);
    CHECK(gate.quiet_rounds() == 1);
    auto fourth = std::async(std::launch::async, [&gate] { gate.take_place(); });
    CHECK(fourth.wait_for(5s) == std::future_status::ready);  // one of two places is the set-aside work's
    // With no student left to start, work set aside goes on at once, beside the last students.
    gate.nothing_left_to_start();
    auto last = std::async(std::launch::async, [&gate] { return gate.wait_until_quiet(true); });
    CHECK(last.wait_for(5s) == std::future_status::ready);
    CHECK(gate.quiet_rounds() == 2);
    gate.give_place();
    gate.give_place();
}

TEST_CASE("the students of a quiet round go on together, past the places, and no one else starts until places are free") {
    using namespace std::chrono_literals;
    GpuGate gate(2s, 2);
    gate.take_place();  // a student of the class, still graded
    gate.take_place();  // a student whose work was set aside
    auto first = std::async(std::launch::async, [&gate] { return gate.wait_until_quiet(true); });
    gate.take_place();  // its place, taken by a third
    auto second = std::async(std::launch::async, [&gate] { return gate.wait_until_quiet(true); });
    gate.take_place();  // and a fourth
    CHECK(first.wait_for(200ms) == std::future_status::timeout);
    gate.nothing_left_to_start();
    CHECK(first.wait_for(5s) == std::future_status::ready);  // both, though two students hold both places
    CHECK(second.wait_for(5s) == std::future_status::ready);
    CHECK(gate.quiet_rounds() == 1);
    auto next = std::async(std::launch::async, [&gate] { gate.take_place(); });
    gate.give_place();
    gate.give_place();
    CHECK(next.wait_for(200ms) == std::future_status::timeout);  // four placed, two places
    gate.give_place();
    CHECK(next.wait_for(5s) == std::future_status::ready);
    gate.give_place();
    gate.give_place();
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

TEST_CASE("a race check that never ends is stopped at its case's limit and says so; the other cases keep theirs") {
    // racehang passes, but hangs under racecheck; hang hangs in the graded run too, and is not race-checked.
    std::vector<CasePlan> cases = plans({"pass-1", "racehang-race", "pass-race", "hang-race"});
    cases[1].race_check = cases[2].race_check = cases[3].race_check = true;
    const auto started = std::chrono::steady_clock::now();
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, with_tools("-racecheck", 5.0));
    CHECK(seconds_since(started) < 8.0);
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

TEST_CASE("the compute-sanitizer reruns of a failing case that never ends stop within their budget and say so") {
    std::vector<CasePlan> cases = plans({"pass-1", "toolhang-2"});
    cases[1].case_seconds = 10.0;
    const auto started = std::chrono::steady_clock::now();
    const RunResult result = run_cases(CUGRADE_SCRIPTED_HARNESS, cases, with_tools("-reruns", 2.0));
    // memcheck, then initcheck and synccheck for a wrong answer: all three within one budget of 2 s.
    CHECK(seconds_since(started) < 5.0);
    CHECK(result.cases[1].status == Status::wrong_answer);
    CHECK(result.cases[1].detail == "expected 1, got 2");
    CHECK_FALSE(result.cases[1].diagnosis);
    REQUIRE(result.diagnosis_notes.size() == 1);
    CHECK(result.diagnosis_notes[0] == "compute-sanitizer's memcheck stopped after 2 s on toolhang-2");
    CHECK(result.seconds.diagnosis < 3.0);
}

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
    CHECK(none.diagnosis_notes == std::vector<std::string>{"the speed test could not be profiled: Nsight Compute "
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
    const auto started = std::chrono::steady_clock::now();
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    CHECK(seconds_since(started) < 4.0);
    REQUIRE(result.diagnosis_notes.size() == 1);
    CHECK(result.diagnosis_notes[0] == "the speed test could not be profiled: Nsight Compute stopped after 1.5 s");
    CHECK(result.cases[0].status == Status::passed);
    // The profiled call held the GPU alone and the machine's counters: both are free again.
    CHECK_FALSE(gate.exclusive_held());
    CHECK(gate.exclusive_seconds() > 1.0);
    const auto again = std::chrono::steady_clock::now();
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    CHECK(seconds_since(again) < 4.0);
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
    result.cases[1].measurements = {
        {"kernel_profile",
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
        const auto started = std::chrono::steady_clock::now();
        profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
        CHECK(seconds_since(started) < 2.0);
    }
    REQUIRE(result.diagnosis_notes.size() == 1);
    CHECK(result.diagnosis_notes[0] ==
          std::string("the speed test was not profiled: other profiles held the GPU's counters for 0.5 s (they take turns "
                      "on a machine)") +
              (in_batch ? "; `cugrade check` of this submission waits for its turn and profiles it" : ""));
    CHECK(result.seconds.gpu_wait >= 0.5);
    CHECK_FALSE(result.cases[0].diagnosis);
}

TEST_CASE("a speed test's grant says how long it waited and what work left last before it") {
    using namespace std::chrono_literals;
    GpuGate gate;
    GpuGate::Hold running_case(&gate);
    running_case.set_label("alice/sum.cu races/n=1025 racecheck");
    running_case.change(GpuGate::Use::shared);
    auto speed_test = std::async(std::launch::async, [&gate] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::exclusive);
        return hold.last_grant();
    });
    std::this_thread::sleep_for(300ms);
    running_case.change(GpuGate::Use::none);
    const GpuGate::Grant grant = speed_test.get();
    CHECK(grant.waited_seconds >= 0.25);
    CHECK(grant.last_to_leave == "alice/sum.cu races/n=1025 racecheck");
    CHECK(grant.last_to_leave_seconds >= 0.25);

    // Nothing to empty: granted at once, and nothing named.
    GpuGate::Hold alone(&gate);
    alone.change(GpuGate::Use::exclusive);
    CHECK(alone.last_grant().last_to_leave.empty());
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
    options.profile_wait_seconds = 2.0;
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
        CHECK(refused.seconds.gpu_wait < 1.0);  // refused at once, not after the profiles' patience
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
        CHECK(result.diagnosis_notes == std::vector<std::string>{
                                            "the speed test was not profiled: a smaller case failed; it is profiled "
                                            "once every smaller case passes"});
        CHECK(trace_events(alone.file, "counters_round").empty());
    }
    SECTION("a case set aside has no verdict yet, and counts as failed") {
        std::vector<CasePlan> cases = plans({"hang-1", "timedprofile-2"});
        cases[0].case_seconds = 3.0;
        cases[1].timed = true;
        auto graded = std::async(std::launch::async, [&] { return run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options); });
        std::this_thread::sleep_for(300ms);  // the hang holds the GPU shared by now
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
    CHECK(result.diagnosis_notes == std::vector<std::string>{
                                        "the speed test was not profiled: a smaller case failed; it is profiled once "
                                        "every smaller case passes"});
    CHECK(!result.cases[2].diagnosis);
    CHECK(trace_events(file, "profile").empty());  // no Nsight Compute either
    CHECK(!smaller_case_failed(cases, result.cases, {true, false, true}));  // only decided cases count
    CHECK(smaller_case_failed(cases, result.cases, {true, true, false}));
    // Where the grader could not run a case (no compute-sanitizer for a race check), the submission failed nothing.
    result.cases[1].status = Status::harness_error;
    CHECK(!smaller_case_failed(cases, result.cases, {true, true, true}));
}

TEST_CASE("the race cases run under one racecheck, and a hazard lands on the case whose part of the output shows it") {
    const auto file = std::filesystem::temp_directory_path() / "cugrade-test-run-races.jsonl";
    std::filesystem::remove(file);
    // A case after a report without its own is clean where racecheck's summary says it printed every report; where
    // it left one out past its print limit, that case runs again alone and shows its own.
    enum class After { nothing, clean_case, left_out_report };
    const After after_report = GENERATE(After::nothing, After::clean_case, After::left_out_report);
    std::vector<CasePlan> cases =
        after_report == After::nothing      ? plans({"pass-1", "pass-race-a", "pass-race-b", "racy-17", "racy-23"})
        : after_report == After::clean_case ? plans({"pass-1", "pass-race-a", "racy-17", "pass-race-b", "racy-23"})
                                            : plans({"pass-1", "pass-race-a", "racy-17", "racyquiet-19", "racy-23",
                                                     "pass-race-b"});
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
    CHECK(racy_17.diagnosis->summary != racy_23.diagnosis->summary);  // each its own report
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

TEST_CASE("in a batch a kept checker's job decides the race cases; a report of its own marks a race, with no fresh racecheck") {
    GpuGate gate;  // outlives the kept checkers, which end holding it
    InABatch batch("kept", 5.0, 2);
    RunOptions& options = batch.options;
    options.gpu_gate = &gate;
    const std::vector<std::vector<std::string>> submissions = {
        {"pass-race-a", "pass-race-b"}, {"pass-race-c", "pass-race-d"}, {"pass-race-e", "racy-17"},
        {"fail-race-f", "pass-race-g"}, {"pass-race-h", "pass-race-i"}};
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
    CHECK(racecheck_endings == std::vector<std::string>{"a job served, nothing reported",
                                                        "a job served, nothing reported",
                                                        "a job served, a report: its checker ended",
                                                        "a job served, nothing reported",
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
                                                       "a job not finished: its checker ended",
                                                       "exited with code 86",
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
    CHECK(endings == std::vector<std::string>{"memcheck: a job served, nothing reported",
                                              "initcheck: exited with code 0",
                                              "synccheck: a job served, nothing reported",
                                              "memcheck: a job served, nothing reported",
                                              "initcheck: exited with code 0",
                                              "synccheck: a job served, nothing reported",
                                              "memcheck: a job not finished: its checker ended",
                                              "memcheck: exited with code 86",
                                              "memcheck: exited with code 3"});
}

TEST_CASE("a checker refused its turn at the counters leaves the profile out, without asking Nsight Compute to wait again") {
    std::vector<CasePlan> cases = plans({"timed-1"});
    cases[0].timed = true;
    RunOptions options = with_tools("-turn-refused", 5.0);
    options.profile_wait_seconds = 5.0;
    GpuGate gate;
    options.gpu_gate = &gate;
    RunResult result;
    result.cases.resize(1);
    result.cases[0].status = Status::passed;
    result.cases[0].measurements = {{"kernel_profile", {{"problem", "other profiles held the GPU's counters"},
                                                         {"turn_refused", true}}}};
    const auto started = std::chrono::steady_clock::now();
    profile_case(CUGRADE_SCRIPTED_HARNESS, cases, 0, options, result);
    CHECK(seconds_since(started) < 1.0);
    CHECK(result.processes == 0);
    REQUIRE(result.diagnosis_notes.size() == 1);
    CHECK(result.diagnosis_notes[0] ==
          "the speed test was not profiled: other profiles held the GPU's counters for 5 s (they take turns on a "
          "machine); `cugrade check` of this submission waits for its turn and profiles it");
    CHECK_FALSE(result.cases[0].diagnosis);
}
