#include "run/run.hpp"

#include <algorithm>
#include <fmt/format.h>

#include <fstream>

#include "run/case_runner.hpp"
#include "cpu/cpu_fault.hpp"
#include "run/sanitizer_checks.hpp"

namespace cugrade {
namespace fs = std::filesystem;

nlohmann::json make_plan(const std::vector<const CasePlan*>& cases, bool skip_exit_handlers,
                         const fs::path& device_code) {
    nlohmann::json plan = {
        {"cases", nlohmann::json::array()}, {"deny_processes", true}, {"skip_exit_handlers", skip_exit_handlers}};
    if (!device_code.empty()) {
        plan["device_code"] = device_code.string();
    }
    for (const CasePlan* c : cases) {
        plan["cases"].push_back(static_cast<const plan::Case&>(*c));
    }
    return plan;
}

std::optional<std::string> gpu_unusable(const fs::path& program, const RunOptions& options) {
    const fs::path plan_file = options.work_dir / "plan-gpu-check.json";
    std::ofstream(plan_file) << nlohmann::json{{"cases", nlohmann::json::array()}}.dump();
    ProcessOptions process;
    process.argv = {fs::absolute(program).string(), plan_file.string()};
    process.working_directory = options.work_dir;
    process.environment = checker_environment(options);
    process.sandbox = options.sandbox;
    process.sandbox.work_dir = options.work_dir;
    const ProcessResult result = run_process(process, std::chrono::duration<double>(options.startup_seconds));
    fs::remove(plan_file);
    if (result.status.success()) {
        return std::nullopt;
    }
    std::string output = result.output.substr(0, 2000);
    return fmt::format("the GPU is not usable: a program that only starts CUDA {}{}{}", result.status.describe(),
                       output.empty() ? "" : ": ", output);
}

// The sizes of the cases in a row that time out before the CPU self-check runs no more of them
// (RunMode::stop_after_timed_out_sizes).
constexpr int cpu_timed_out_sizes_before_stopping = 2;

RunResult run_cases_on_cpu(const fs::path& program, const std::vector<CasePlan>& cases, const RunOptions& options,
                           const std::vector<std::string>& schedules) {
    std::vector<std::size_t> all(cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        all[i] = i;
    }
    const auto run_under = [&](const std::string& schedule, const std::vector<std::size_t>& indices) {
        RunOptions under = options;
        // The checker tells its runner, where the kernels run (cpu/runner.hpp).
        under.environment.emplace_back("CUGRADE_CPU_SCHEDULE", schedule);
        CaseRunner runner(program, cases, under);
        // A kernel that never ends would hold every case to its limit, one after another: two sizes say so.
        RunMode mode;
        mode.stop_after_timed_out_sizes = cpu_timed_out_sizes_before_stopping;
        runner.run(indices, {}, mode);
        // The faults' instructions are the runner's: its binary has the submission's line tables.
        explain_cpu_faults(options.runner, options.student_files, runner.result());
        return std::move(runner.result());
    };
    RunResult first = run_under(schedules.front(), all);
    // A case that crashed, hung or failed to launch says so under every order; those that gave a result run again.
    std::vector<std::size_t> answered;
    for (const std::size_t i : all) {
        if (checked_answer(first.cases[i].status)) {
            answered.push_back(i);
        }
    }
    for (std::size_t k = 1; k < schedules.size() && !answered.empty(); ++k) {
        const RunResult other = run_under(schedules[k], answered);
        first.seconds += other.seconds;
        first.processes += other.processes;
        for (const std::size_t i : answered) {
            CaseResult& result = first.cases[i];
            const CaseResult& again = other.cases[i];
            if (result.status == Status::race || again.status == result.status) {
                continue;
            }
            const CaseResult& wrong = result.status == Status::passed ? again : result;
            result.detail = fmt::format("the result depends on the order threads run in: {} with threads resumed in "
                                        "{} order, {} in {} order ({})",
                                        display_name(result.status), schedules.front(), display_name(again.status),
                                        schedules[k], wrong.detail);
            result.status = Status::race;
            result.diagnosis = Diagnosis{"race",
                                         "the result changed with the order the threads of a block ran in",
                                         "this case",
                                         {},
                                         "a __syncthreads() is missing between a write and another thread's read, "
                                         "or threads update one value without an atomic",
                                         "",
                                         "a race between threads (CPU self-check)",
                                         "barrier"};
        }
    }
    return first;
}

RunResult run_cases(const fs::path& program, const std::vector<CasePlan>& cases, const RunOptions& options) {
    CaseRunner runner(program, cases, options);
    std::vector<std::size_t> visible;
    std::vector<std::size_t> hidden;
    std::vector<std::size_t> race_checked;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        // Where no kernel can touch shared memory, racecheck could find nothing: the race cases are graded plainly.
        // The others are graded with the rest too, and racecheck adds its findings to their verdicts after.
        const bool race_checked_case = cases[i].race_check && options.may_touch_shared_memory;
        if (race_checked_case && options.compute_sanitizer.empty()) {
            runner.settle(i,
                          {Status::harness_error, "compute-sanitizer was not found, so the race check could not run"});
            continue;
        }
        if (race_checked_case) {
            race_checked.push_back(i);
        }
        (cases[i].visibility == Visibility::hidden ? hidden : visible).push_back(i);
    }
    // One process for both (restarts aside): a harness's start is mostly CUDA's context, which the driver makes
    // one at a time for the whole machine.
    std::vector<std::size_t> graded = visible;
    graded.insert(graded.end(), hidden.begin(), hidden.end());
    RunMode graded_mode;
    graded_mode.rerun_launch_failures = true;
    runner.run(graded, {}, graded_mode);
    // A slow speed test graded before a race was found is not profiled for nothing: its profile waits for every
    // case's verdict (profile_case, a round of profiles).
    if (!race_checked.empty()) {
        check_races(program, cases, race_checked, options, runner.result());
    }
    put_races_first(cases, runner.result());
    std::vector<std::size_t> memory_checked;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        if (cases[i].memory_check) {
            memory_checked.push_back(i);
        }
    }
    if (!memory_checked.empty() && options.compute_sanitizer.empty()) {
        runner.result().diagnosis_notes.push_back(
            "the memory check did not run: compute-sanitizer was not found, so reads and writes outside the arrays "
            "were not looked for");
    } else if (!memory_checked.empty()) {
        check_memory(program, cases, memory_checked, options, runner.result());
    }
    diagnose_failures(program, cases, options, runner.result());
    return std::move(runner.result());
}

}  // namespace cugrade
