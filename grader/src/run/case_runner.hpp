// The run loop that every stage running cases drives (run.cpp: the graded run; sanitizer_checks.cpp: the race and
// memory checks and the reruns of a failing case; profile_case.cpp: Nsight Compute's profile): harness processes
// started with a plan, restarted after a failure, their requests for the shared GPU and the machine's counters
// answered, each case's verdict and what it printed recorded.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/process.hpp"
#include "schedule/checker_pool.hpp"
#include "schedule/counters_rounds.hpp"
#include "run/run.hpp"

namespace cugrade {

using Seconds = std::chrono::duration<double>;

// How many cases of a run run once more after a launch failure (RunMode::rerun_launch_failures): another context's
// fault is rare (one case in a class of 300 submissions), and a submission that traps in every case costs this many
// processes more.
inline constexpr int launch_failure_reruns = 2;

// `seconds` from now.
Clock::time_point after(double seconds);

// The machine's one lock on the GPUs' performance counters, for every profile of every cugrade: Nsight Compute's
// processes and the checkers' own.
std::filesystem::path profiler_lock_file();

// The checker's environment. It replays all of a submission's work, and does its own, on one stream at a time, so one
// hardware work queue is all its context needs; the driver makes contexts one at a time for the whole GPU, and one with
// a single queue in about a third of the time of the default eight (docs/performance-history.md), which is what a
// class's harness processes wait for.
std::vector<std::pair<std::string, std::string>> checker_environment(const RunOptions& options);

// How the harness runs the cases, beside grading them: for a diagnosis, never graded.
struct RunMode {
    // Outputs and scratch without guard regions or poison, for compute-sanitizer to see every access outside an
    // array and every read of memory nothing wrote.
    bool bare_buffers = false;
    // The submission's calls only, inside NVTX ranges for the profiler, and no timing. The profiled calls hold the
    // GPU alone.
    bool profile = false;
    // The tool the harness runs under, as messages name it ("racecheck"); empty: none.
    std::string tool;
    // The harness marks the start of each case in what it prints, so that a tool's reports there can be told
    // apart by case (CaseRunner::case_output).
    bool case_markers = false;
    // A checker kept for a round of profiles (counters_rounds.hpp): each job a slow speed test's call checked and
    // its counters read, the profiler attached throughout.
    bool counters_round = false;
    // A graded run on a GPU that other processes may share: a case that fails with a launch failure (another
    // context's fault can end this context's kernels so) runs once more, in the fresh process the fault starts anyway,
    // and the second run's verdict is the case's; at most launch_failure_reruns cases of a run, its chains and quiet
    // rounds included.
    bool rerun_launch_failures = false;
    // The CPU self-check's (run_cases_on_cpu): once the cases that timed out in a row (a kernel that never ends holds
    // each to its limit) have this many sizes, the cases left are not run, and say why; 0: every case runs. A hang
    // at one size (the cases of its inputs) leaves the other sizes their verdicts.
    int stop_after_timed_out_sizes = 0;

    // Under a tool, each of the harness's buffers is an allocation of its own, as the tool sees them (a stray access
    // past one falls outside every allocation, not in a neighbour from a pool); a plain run pools them
    // (cuda_check.cuh says why).
    bool separate_allocations() const { return !tool.empty(); }
};

// Runs cases in harness processes, restarting after each failure, and records what became of every case.
class CaseRunner {
public:
    CaseRunner(const std::filesystem::path& program, const std::vector<CasePlan>& cases, const RunOptions& options);
    CaseRunner(const CaseRunner&) = delete;
    CaseRunner& operator=(const CaseRunner&) = delete;

    struct Ended {
        ExitStatus status;
        std::string output;      // what it printed
        bool truncated = false;  // past the output limit
    };

    // Runs the given cases until each has a verdict; returns how each process ended, in order.
    std::vector<Ended> run(const std::vector<std::size_t>& indices, const std::vector<std::string>& launcher,
                           RunMode mode = {});

    void settle(std::size_t i, CaseResult result);

    // Takes back the verdicts of these cases, so that they run again.
    void reopen(const std::vector<std::size_t>& indices);

    // What a job of a checker kept across submissions showed (run_in_kept_checker).
    struct KeptJob {
        // The tool ran every case and printed nothing but its banner: it has nothing to add to their verdicts.
        bool nothing_reported = false;
        // The cases whose part of what the job printed ended before the next case's marker or the job's end, as
        // they ran, with what the tool printed there: a part of a case the checker did not finish, or of output
        // cut at its limit, is none of them.
        std::vector<std::pair<std::size_t, std::string>> finished_parts;
        // A case ran past its limit there: it would again in another checker.
        bool past_limit = false;
    };
    // Runs `cases` (undecided, of one visibility) as one job of a checker kept across submissions under the tool
    // `launcher` starts (checker_pool.hpp), where the options give a pool; an empty KeptJob where there is none.
    // What the cases gave there is never a verdict (another submission's kernels ran in that process before), so
    // they stay undecided; what the tool printed in each case's part is the job's answer. A checker whose tool
    // said anything, or whose job did not end as it should, is ended: its print limit may be spent.
    KeptJob run_in_kept_checker(const std::vector<std::size_t>& cases, const std::vector<std::string>& launcher,
                                RunMode mode);
    // Whether a job of a kept checker showed the tool has nothing to add to these cases' verdicts; false where
    // there is no pool, the tool said anything, or the job did not end as it should (the cases are for a fresh
    // process under the tool, as without a pool).
    bool nothing_reported_in_kept_checker(const std::vector<std::size_t>& cases,
                                          const std::vector<std::string>& launcher, RunMode mode) {
        return run_in_kept_checker(cases, launcher, mode).nothing_reported;
    }

    RunResult& result() { return run_; }

    // Whether a slow speed test of this run is profiled in a round of profiles (counters_rounds.hpp) once the
    // submission's cases are graded, rather than in its own process: wherever the checker can be kept for a round
    // (the exercise's checker as built, the submission's runner and device code) and CUPTI is there. A batch's
    // rounds serve several submissions; `check`'s serves its own.
    bool counters_in_rounds() const;
    // A round of profiles (CountersRounds::Round): one checker started while the GPU is shared, then every request
    // profiled as a job of it with the GPU alone and the machine's counters held throughout; a job that ends its
    // checker has the next start another. Requests of several exercises' checkers are served one checker after
    // another.
    static void run_counters_round(const std::vector<CountersRequest*>& requests);

    // What case i printed (tool reports included) in runs with case markers, and where it ran: the process (its
    // number in this runner) and its place among that process's cases. The last run's, where it ran again.
    struct CaseOutput {
        std::string text;
        int process = -1;
        int position = -1;
    };
    CaseOutput case_output(std::size_t i) const;

private:
    // A checker and its runner, started.
    struct Harness {
        std::unique_ptr<ChildProcess> child;
        std::unique_ptr<ChildProcess> runner;
        std::string token;
        Clock::time_point started;
    };
    std::vector<std::size_t> remaining(const std::vector<std::size_t>& indices) const;
    bool kept_checker_serves(const std::vector<std::size_t>& cases, const std::vector<std::string>& launcher) const;
    std::unique_ptr<KeptChecker> start_kept_checker(const std::string& key, const std::vector<std::string>& launcher,
                                                    RunMode mode);
    // A checker for a round of profiles, started and ready (its requests for the GPU answered through `gpu`), or
    // null with `why`.
    std::unique_ptr<KeptChecker> start_round_checker(GpuGate::Hold& gpu, std::string& why);
    // Speed test i profiled as a job of a round's `checker`: the checker's "kernel_profile", or {"problem": why}.
    // `usable`: the job ended as it should, and the checker may serve the next.
    nlohmann::json counters_job(KeptChecker& checker, std::size_t i, double call_ms, GpuGate::Hold& gpu, bool& usable);
    struct CountersRound;
    // One checker's requests profiled in a round of their own (run_counters_round).
    static void run_one_checkers_round(const std::vector<CountersRequest*>& mine);
    // Request r, one of this runner's, profiled as a job of the round's checker, started first where it has none;
    // `options` are the round's.
    void serve_in_round(CountersRequest& r, CountersRound& round, GpuGate::Hold& gpu, const RunOptions& options);
    nlohmann::json plan_for(const std::vector<const CasePlan*>& plan_cases, const std::vector<std::string>& launcher,
                            RunMode mode, const std::string& marker) const;
    bool gpu_requests_answered(RunMode mode) const;
    bool counters_read(const std::vector<std::string>& launcher) const;
    // The submission's runner, started without a GPU, and the checker's end of the channel to it (the caller's to
    // close once the checker has it).
    std::pair<std::unique_ptr<ChildProcess>, int> start_runner() const;
    // Writes the plan and starts the checker with it, and the runner beside it.
    Harness start_harness(const nlohmann::json& plan, const std::vector<std::string>& launcher, RunMode mode);
    struct ProcessPlan;
    struct ProcessOutcome;
    class ProcessWatch;
    // The plan of a process for the cases `left`, in order, and where what it prints turns hidden.
    ProcessPlan plan_process(const std::vector<std::size_t>& left, const std::vector<std::string>& launcher,
                             RunMode mode) const;
    // Each case's part of what a process printed with case markers (case_output).
    void keep_case_outputs(const std::string& printed, const std::string& marker);
    // What a process and its runner printed, filed as the run's output and hidden output.
    void file_process_output(const ProcessPlan& plan, const ProcessOutcome& seen, const Harness& harness,
                             const Ended& ended, RunMode mode);
    // The verdict of the case a process ended in, or of all of `left` where it ended before its first; or the case
    // set aside.
    void settle_after_process(const std::vector<std::size_t>& left, const ProcessOutcome& seen,
                              const ExitStatus& status, RunMode mode, double startup_seconds);
    // Runs the cases until each has a verdict or is set aside (for the caller's quiet round); the processes'
    // endings go to `processes`. A submission that faults case after case has the rest run in chains at once.
    void run_until_set_aside(const std::vector<std::size_t>& indices, const std::vector<std::string>& launcher,
                             RunMode mode, std::vector<Ended>& processes);
    // Runs each of `groups` in processes of its own, all groups at once (cases set aside, run again on a quiet GPU;
    // the chains of a submission that faults case after case), and takes their verdicts, output and costs as its
    // own; a case set aside there is set aside here. `why` names their plan files.
    void run_apart(const std::vector<std::vector<std::size_t>>& groups, const std::vector<std::string>& launcher,
                   RunMode mode, const std::string& why, std::vector<Ended>& processes);
    // Whether the cases that timed out in a row, with those `left` settled by the process that just ended, have
    // reached RunMode::stop_after_timed_out_sizes; `sizes` holds their sizes.
    bool too_many_timed_out(const std::vector<std::size_t>& left, RunMode mode, std::set<std::uint64_t>& sizes) const;
    Ended run_process_once(const std::vector<std::size_t>& left, const std::vector<std::string>& launcher,
                           RunMode mode);
    double& stage_of(const CasePlan& c);

    std::filesystem::path program_;
    std::string plan_prefix_ = "plan-";  // of its plan files' names, in the work folder it may share with others
    const std::vector<CasePlan>& cases_;
    const RunOptions& options_;
    std::vector<bool> done_;
    std::vector<bool> set_aside_;         // stopped while keeping a speed test waiting, to run when the GPU is quiet
    std::vector<bool> rerun_when_quiet_;  // run again after being set aside: never set aside twice
    std::vector<bool> rerun_after_launch_failure_;  // never twice (RunMode::rerun_launch_failures)
    // Shared with the runners of its chains and quiet rounds (run_apart), which run at once: two cases in all.
    std::shared_ptr<std::atomic<int>> launch_failure_reruns_left_;
    bool splits_fault_chains_ = true;  // false in a chain's own runner (run_until_set_aside)
    std::map<std::string, std::size_t> index_of_;
    std::map<std::size_t, CaseOutput> case_output_;
    RunResult run_;
};

}  // namespace cugrade
