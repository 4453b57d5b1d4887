// The run loop against a scripted harness (scripted_harness.cpp), whose cases do what their ids say: the plans,
// runs, tools and traces that the test_run_*.cpp files share. Their runs share a folder and the machine's lock on the
// GPU's counters, so their cases run one at a time (tests/CMakeLists.txt).
#pragma once

#include "run/case_runner.hpp"
#include "schedule/checker_pool.hpp"
#include "schedule/counters_rounds.hpp"
#include "run/run.hpp"
#include "base/machine_lock.hpp"
#include "schedule/same_code_profiles.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace scripted_run {

using namespace cugrade;

inline std::vector<CasePlan> plans(const std::vector<std::string>& ids) {
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

inline RunResult run_plans(const std::vector<CasePlan>& cases, GpuGate* gate = nullptr,
                           const std::string& folder = "") {
    const auto dir = std::filesystem::temp_directory_path() / ("cugrade-test-run" + folder);
    std::filesystem::create_directories(dir);
    RunOptions options;
    options.work_dir = dir;
    options.startup_seconds = 5.0;
    options.gpu_gate = gate;
    return run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options);
}

// A run of the scripted harness on a shared GPU, in a thread of its own (each in a folder of its own).
inline std::future<RunResult> run_beside(const std::vector<std::string>& ids, GpuGate& gate,
                                         const std::string& folder) {
    return std::async(std::launch::async, [ids, &gate, folder] { return run_plans(plans(ids), &gate, folder); });
}

inline bool still_running(const std::future<RunResult>& run, std::chrono::milliseconds wait) {
    return run.wait_for(wait) == std::future_status::timeout;
}

inline RunResult run(const std::vector<std::string>& ids) { return run_plans(plans(ids)); }

// Options whose compute-sanitizer and Nsight Compute are a stand-in that runs the program as they would, in a
// folder of its own.
inline RunOptions with_tools(const std::string& folder, double diagnosis_seconds) {
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
        options.device_code =
            CUGRADE_TEST_DATA "/unit/runner_stand_in.sh";  // any file: the scripted harness reads none
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
inline std::vector<CasePlan> race_checked(const std::vector<std::string>& ids) {
    std::vector<CasePlan> cases = plans(ids);
    for (auto& c : cases) {
        c.race_check = true;
    }
    return cases;
}

// A passed speed test profiled by `profiler`, a stand-in for Nsight Compute in tests/unit/, in a folder of its own.
inline RunResult profiled_by(const std::string& profiler, const std::string& folder) {
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
inline std::vector<nlohmann::json> trace_events(const std::filesystem::path& file, const std::string& event) {
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
inline std::vector<std::pair<std::string, std::string>> racecheck_runs(const std::filesystem::path& file) {
    std::vector<std::pair<std::string, std::string>> runs;
    for (const auto& record : trace_events(file, "")) {
        if (record["tool"] == "racecheck") {
            runs.emplace_back(record["ended"], record["first_case"]);
        }
    }
    return runs;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Waits until `ready` holds, polling: the order a test needs before its next step, not a time it asserts. The bound
// only ends a test whose awaited event never comes.
template <typename Ready>
bool wait_until(Ready ready, std::chrono::seconds bound = std::chrono::seconds(60)) {
    const auto until = std::chrono::steady_clock::now() + bound;
    while (!ready()) {
        if (std::chrono::steady_clock::now() > until) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

}  // namespace scripted_run
