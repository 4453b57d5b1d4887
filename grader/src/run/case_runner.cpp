#include "run/case_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <ranges>
#include <tuple>

#include <sys/socket.h>
#include <unistd.h>

#include "diagnose/answer_explanation.hpp"
#include "run/case_markers.hpp"
#include "run/harness_records.hpp"
#include "base/machine_lock.hpp"
#include "protocol.hpp"
#include "schedule/same_code_profiles.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// No case: the harness is running none.
constexpr std::size_t no_case = static_cast<std::size_t>(-1);

// The seconds a harness process has to start its first case, and each next one after a case's result.
double startup_seconds(const RunOptions& options, const std::vector<std::string>& launcher) {
    return launcher.empty() ? options.startup_seconds : options.sanitizer_startup_seconds;
}

// The verdict of a harness's "result" record.
CaseResult result_of(const nlohmann::json& record) {
    CaseResult result;
    result.status = status_from_string(record.value("status", "")).value_or(Status::harness_error);
    result.detail = record.value("detail", "");
    if (record.contains("measurements") && record["measurements"].is_object()) {
        result.measurements = record["measurements"];
    }
    if (result.status == Status::wrong_answer) {
        result.diagnosis = answer_diagnosis(record);
    }
    return result;
}

// What became of the case that was running when the process ended without reporting it. `tool`: the tool it ran
// under ("racecheck"), or empty.
CaseResult interrupted(const ExitStatus& status, double case_seconds, const std::string& tool) {
    if (!status.limit.empty()) {
        return {Status::limit_exceeded, fmt::format("the program {}", status.describe())};
    }
    if (status.timed_out && !tool.empty()) {
        return {Status::timed_out,
                fmt::format("{} stopped after {} s: the case did not finish under the tool, which runs kernels "
                            "many times slower: an endless loop, blocks waiting on each other, or far too slow",
                            tool, case_seconds)};
    }
    if (status.timed_out) {
        return {Status::timed_out,
                fmt::format("no result within {} s: an endless loop, blocks waiting on each other, or far too slow",
                            case_seconds)};
    }
    if (status.signal != 0) {
        return {Status::crashed, fmt::format("the program {} during this case", status.describe())};
    }
    return {Status::exited_early, fmt::format("the program {} before reporting this case", status.describe())};
}

// What became of the cases of a process that ended before its first case. `fatal`: why the harness said it stopped;
// `tool`: the tool it ran under, or empty.
CaseResult not_started(const std::optional<std::string>& fatal, const ExitStatus& status, const std::string& tool,
                       double startup_seconds) {
    if (fatal) {
        return {Status::harness_error, *fatal};
    }
    if (!status.limit.empty()) {
        return {Status::limit_exceeded, fmt::format("the program {} before running any case", status.describe())};
    }
    if (status.timed_out) {
        return {Status::timed_out,
                tool.empty() ? fmt::format("the program did not start its first case within {} s", startup_seconds)
                             : fmt::format("{} stopped after {} s: the program did not start its first case under "
                                           "the tool",
                                           tool, startup_seconds)};
    }
    return {status.signal != 0 ? Status::crashed : Status::exited_early,
            fmt::format("the program {} before running any case", status.describe())};
}

// What a case left after cases of `sizes` sizes in a row timed out is (RunMode::stop_after_timed_out_sizes).
CaseResult not_run_after_timeouts(int sizes) {
    return {Status::skipped,
            fmt::format("not run: cases of {} sizes in a row timed out, and the CPU self-check stops there (a kernel "
                        "that never ends, or threads that wait for one another forever, would hold every case to its "
                        "limit); fix that, and the next check runs every case",
                        sizes)};
}

// The cases left of a submission that faults case after case, in chains to run at once: the machine starts about 5
// faulting processes a second (docs/batch.md), and a chain about 1.4, so a few chains, not a process a case. The small
// cases are shared out among them in order; every large one stays in the last, so that the submission never holds
// more memory at once than one process's largest case and the small ones beside it. None where too few are small.
std::vector<std::vector<std::size_t>> fault_chains(const std::vector<CasePlan>& cases,
                                                   const std::vector<std::size_t>& left) {
    constexpr std::size_t count = 3;
    constexpr std::uint64_t small_case_elements = std::uint64_t{1} << 22;
    const auto is_small = [&](std::size_t i) { return cases[i].size() <= small_case_elements; };
    const auto small = static_cast<std::size_t>(std::ranges::count_if(left, is_small));
    if (small < 2 * count) {
        return {};
    }
    std::vector<std::vector<std::size_t>> chains(count);
    std::size_t small_seen = 0;
    for (const std::size_t i : left) {
        chains[is_small(i) ? small_seen++ * count / small : count - 1].push_back(i);  // each chain in order
    }
    return chains;
}

// Adds `text` to what a stream kept, up to the output limit.
void keep_output(ProgramOutput& stream, const std::string& text, bool text_truncated, std::size_t limit) {
    const std::size_t room = limit > stream.text.size() ? limit - stream.text.size() : 0;
    stream.text += text.substr(0, room);
    stream.truncated = stream.truncated || text_truncated || text.size() > room;
}

}  // namespace

Clock::time_point after(double seconds) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(Seconds(seconds));
}

fs::path profiler_lock_file() { return fs::temp_directory_path() / "cugrade-gpu-counters.lock"; }

std::vector<std::pair<std::string, std::string>> checker_environment(const RunOptions& options) {
    auto environment = options.environment;
    environment.emplace_back("CUDA_DEVICE_MAX_CONNECTIONS", "1");
    return environment;
}

CaseRunner::CaseRunner(const fs::path& program, const std::vector<CasePlan>& cases, const RunOptions& options)
    : program_(fs::absolute(program)),
      cases_(cases),
      options_(options),
      done_(cases.size()),
      set_aside_(cases.size()),
      rerun_when_quiet_(cases.size()),
      rerun_after_launch_failure_(cases.size()),
      launch_failure_reruns_left_(std::make_shared<std::atomic<int>>(launch_failure_reruns)) {
    run_.cases.resize(cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        index_of_[cases[i].id] = i;
    }
}

std::vector<CaseRunner::Ended> CaseRunner::run(const std::vector<std::size_t>& indices,
                                               const std::vector<std::string>& launcher, RunMode mode) {
    std::vector<Ended> processes;
    while (true) {
        run_until_set_aside(indices, launcher, mode, processes);
        std::size_t aside = 0;
        for (const std::size_t i : indices) {
            aside += set_aside_[i] ? 1 : 0;
        }
        if (aside == 0) {
            return processes;
        }
        // The cases set aside run again once nothing else is graded on the GPU, and are not set aside twice. They
        // seemed to hang, and a case that does holds its process to its limit: one after another, a submission's
        // hanging cases would add their limits up at the end of the class (two of 10 s: 20 s), so each runs in a
        // process of its own, all at once, as the other students' set-aside cases do beside them.
        const double waited = options_.gpu_gate->wait_until_quiet(options_.holds_gpu_place);
        run_.seconds.quiet_wait += waited;
        if (options_.trace != nullptr) {
            options_.trace->record(
                {{"event", "quiet"}, {"submission", options_.trace_label}, {"cases", aside}, {"waited", waited}});
        }
        std::vector<std::vector<std::size_t>> again;
        for (const std::size_t i : indices) {
            if (set_aside_[i]) {
                set_aside_[i] = false;
                rerun_when_quiet_[i] = true;
                again.push_back({i});
            }
        }
        if (again.size() > 1) {
            run_apart(again, launcher, mode, "quiet", processes);
        }
    }
}

void CaseRunner::run_until_set_aside(const std::vector<std::size_t>& indices, const std::vector<std::string>& launcher,
                                     RunMode mode, std::vector<Ended>& processes) {
    // A submission that faults case after case takes a process for each (a fault spoils the context for good), one
    // after another: 35 for a sum that faults in every case. Once two processes in a row ended at their first case,
    // the cases left run in a few chains of processes at once (fault_chains), each chain restarting after its own
    // faults: the same processes, the worker's wait for them a fraction.
    int ended_at_first_case = 0;
    std::set<std::uint64_t> timed_out_sizes;  // of the cases that timed out in a row
    for (auto left = remaining(indices); !left.empty(); left = remaining(indices)) {
        if (splits_fault_chains_ && launcher.empty() && !mode.profile && ended_at_first_case >= 2) {
            if (const auto chains = fault_chains(cases_, left); !chains.empty()) {
                run_apart(chains, launcher, mode, "chain", processes);
                return;
            }
        }
        processes.push_back(run_process_once(left, launcher, mode));
        const Ended& ended = processes.back();
        const bool restarted = ended.status.exited() && ended.status.code == protocol::exit_restart;
        ended_at_first_case = restarted && left.size() - remaining(indices).size() == 1 ? ended_at_first_case + 1 : 0;
        if (too_many_timed_out(left, mode, timed_out_sizes)) {
            for (const std::size_t i : remaining(indices)) {
                settle(i, not_run_after_timeouts(mode.stop_after_timed_out_sizes));
            }
            return;
        }
    }
}

bool CaseRunner::too_many_timed_out(const std::vector<std::size_t>& left, RunMode mode,
                                    std::set<std::uint64_t>& sizes) const {
    if (mode.stop_after_timed_out_sizes <= 0) {
        return false;
    }
    // A process runs its cases in order: those it settled are the first of `left`.
    for (const std::size_t i : left) {
        if (!done_[i]) {
            break;
        }
        if (run_.cases[i].status == Status::timed_out) {
            sizes.insert(cases_[i].size());
        } else {
            sizes.clear();
        }
    }
    return static_cast<int>(sizes.size()) >= mode.stop_after_timed_out_sizes;
}

void CaseRunner::run_apart(const std::vector<std::vector<std::size_t>>& groups,
                           const std::vector<std::string>& launcher, RunMode mode, const std::string& why,
                           std::vector<Ended>& processes) {
    std::vector<std::unique_ptr<CaseRunner>> runners;
    for (std::size_t k = 0; k < groups.size(); ++k) {
        runners.push_back(std::make_unique<CaseRunner>(program_, cases_, options_));
        CaseRunner& runner = *runners.back();
        runner.plan_prefix_ = fmt::format("{}{}-{}-{}-", plan_prefix_, why, run_.processes, k);
        runner.rerun_when_quiet_ = rerun_when_quiet_;
        runner.rerun_after_launch_failure_ = rerun_after_launch_failure_;
        runner.launch_failure_reruns_left_ = launch_failure_reruns_left_;
        runner.splits_fault_chains_ = false;
    }
    std::vector<std::future<std::vector<Ended>>> running;
    for (std::size_t k = 0; k < groups.size(); ++k) {
        running.push_back(std::async(std::launch::async, [&, k] {
            std::vector<Ended> ended;
            runners[k]->run_until_set_aside(groups[k], launcher, mode, ended);
            return ended;
        }));
    }
    for (std::size_t k = 0; k < groups.size(); ++k) {
        std::vector<Ended> ended = running[k].get();
        CaseRunner& runner = *runners[k];
        for (const std::size_t i : groups[k]) {
            if (runner.done_[i]) {
                settle(i, std::move(runner.run_.cases[i]));
            }
            set_aside_[i] = set_aside_[i] || runner.set_aside_[i];  // for this runner's quiet round
        }
        for (const auto& [index, part] : runner.case_output_) {
            case_output_[index] = {part.text, run_.processes + part.process, part.position};
        }
        run_.processes += runner.run_.processes;
        run_.forged_records += runner.run_.forged_records;
        run_.seconds += runner.run_.seconds;
        keep_output(run_.output, runner.run_.output.text, runner.run_.output.truncated, options_.output_limit);
        keep_output(run_.hidden_output, runner.run_.hidden_output.text, runner.run_.hidden_output.truncated,
                    options_.output_limit);
        add_protections(run_.protections, runner.run_.protections);
        processes.insert(processes.end(), std::make_move_iterator(ended.begin()), std::make_move_iterator(ended.end()));
    }
}

void CaseRunner::settle(std::size_t i, CaseResult result) {
    run_.cases[i] = std::move(result);
    done_[i] = true;
}

void CaseRunner::reopen(const std::vector<std::size_t>& indices) {
    for (const std::size_t i : indices) {
        run_.cases[i] = {};
        done_[i] = false;
    }
}

CaseRunner::CaseOutput CaseRunner::case_output(std::size_t i) const {
    const auto found = case_output_.find(i);
    return found != case_output_.end() ? found->second : CaseOutput{};
}

std::vector<std::size_t> CaseRunner::remaining(const std::vector<std::size_t>& indices) const {
    std::vector<std::size_t> left;
    for (const std::size_t i : indices) {
        if (!done_[i] && !set_aside_[i]) {
            left.push_back(i);
        }
    }
    return left;
}

nlohmann::json CaseRunner::plan_for(const std::vector<const CasePlan*>& plan_cases,
                                    const std::vector<std::string>& launcher, RunMode mode,
                                    const std::string& marker) const {
    nlohmann::json plan = make_plan(plan_cases, /*skip_exit_handlers=*/launcher.empty(), options_.device_code);
    if (mode.case_markers) {
        plan["case_marker"] = marker;
    }
    plan["gpu_gate"] = gpu_requests_answered(mode);
    plan["bare_buffers"] = mode.bare_buffers;
    plan["separate_allocations"] = mode.separate_allocations();
    plan["profile"] = mode.profile;
    if (counters_read(launcher)) {
        plan["counter_profiler"] = options_.cupti_library.string();
    }
    return plan;
}

bool CaseRunner::gpu_requests_answered(RunMode mode) const {
    // A profiled run asks for the GPU alone around its profiled call, batch or not.
    return options_.gpu_gate != nullptr || mode.profile;
}

bool CaseRunner::counters_read(const std::vector<std::string>& launcher) const {
    // Counters are read in plain runs only: a sanitizer's instrumentation would be what they measure.
    return options_.diagnose && !options_.cupti_library.empty() && launcher.empty();
}

std::pair<std::unique_ptr<ChildProcess>, int> CaseRunner::start_runner() const {
    int channel[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
        throw std::runtime_error(fmt::format("cannot make a channel for the runner: {}", std::strerror(errno)));
    }
    ProcessOptions runner_process;
    runner_process.argv = {options_.runner.string()};
    runner_process.working_directory = options_.work_dir;
    runner_process.peer_fd = channel[1];
    runner_process.peer_fd_env = protocol::runner_fd_env;
    runner_process.sandbox = options_.sandbox;
    runner_process.sandbox.gpu = false;
    runner_process.sandbox.work_dir = options_.work_dir;
    runner_process.output_limit = options_.output_limit;
    std::unique_ptr<ChildProcess> runner;
    try {
        runner = std::make_unique<ChildProcess>(runner_process);
    } catch (...) {
        ::close(channel[0]);
        ::close(channel[1]);
        throw;
    }
    ::close(channel[1]);
    return {std::move(runner), channel[0]};
}

CaseRunner::Harness CaseRunner::start_harness(const nlohmann::json& plan, const std::vector<std::string>& launcher,
                                              RunMode mode) {
    const fs::path plan_file = options_.work_dir / fmt::format("{}{}.json", plan_prefix_, run_.processes + 1);
    std::ofstream(plan_file) << plan.dump(2);
    Harness harness;

    // The submission's host code runs in a runner of its own, without a GPU, over a channel to the harness.
    int runner_end = -1;
    if (!options_.runner.empty()) {
        std::tie(harness.runner, runner_end) = start_runner();
    }

    harness.token = make_token();
    ProcessOptions process;
    process.argv = launcher;
    process.argv.push_back(program_.string());
    process.argv.push_back(plan_file.string());
    process.working_directory = options_.work_dir;
    process.result_channel = true;
    process.environment = checker_environment(options_);
    process.environment.emplace_back(protocol::token_env, harness.token);
    process.sandbox = options_.sandbox;
    process.sandbox.work_dir = options_.work_dir;
    if (mode.profile) {
        // Nsight Compute reads its own files, and talks to the process it profiles over a socket on this
        // machine. The checker runs no code of the submission's on the host (the runner does, with no network),
        // and shuts sockets off itself once CUDA has started.
        process.sandbox.network = true;
        if (!options_.nsight_compute_files.empty()) {
            process.sandbox.readable.push_back(options_.nsight_compute_files);
        }
    }
    if (counters_read(launcher)) {
        process.sandbox.readable.push_back(options_.cupti_library.parent_path());  // CUPTI loads its neighbours
    }
    process.output_limit = options_.output_limit;
    if (harness.runner) {
        process.peer_fd = runner_end;
        process.peer_fd_env = protocol::runner_fd_env;
    }
    try {
        harness.child = std::make_unique<ChildProcess>(process);
    } catch (...) {
        if (runner_end >= 0) {
            ::close(runner_end);
        }
        throw;
    }
    if (runner_end >= 0) {
        ::close(runner_end);
    }
    harness.started = Clock::now();
    ++run_.processes;
    return harness;
}

// What a harness process is to run, and where what it prints turns hidden.
struct CaseRunner::ProcessPlan {
    std::vector<const CasePlan*> cases;
    bool starts_hidden = false;  // its first case is hidden: all it prints is hidden output
    bool switches = false;       // visible cases, then hidden ones: it says when the hidden ones begin
    std::string marker;          // of each case's start in what it prints (RunMode::case_markers), or empty
    nlohmann::json plan;
};

// What the watch of a harness process saw that its cases' verdicts and its output's filing depend on.
struct CaseRunner::ProcessOutcome {
    std::size_t current = no_case;  // the case the harness was running when it ended
    bool started_any = false;
    bool set_aside_now = false;  // its case kept a speed test waiting: stopped, to run again when the GPU is quiet
    std::optional<std::string> fatal;
    // How much each process had printed when the hidden cases began (protocol.hpp).
    std::optional<std::pair<std::size_t, std::size_t>> printed_before_hidden;
    bool truncated_before_hidden = false;
};

// A harness process from its start to its end: its records answered, its deadlines kept, what it holds of a shared
// GPU and of the machine's counters changed as it asks, and its time counted and traced.
class CaseRunner::ProcessWatch {
public:
    ProcessWatch(CaseRunner& case_runner, const Harness& harness, const ProcessPlan& plan,
                 const std::vector<std::string>& launcher, RunMode mode);

    // Until it closes its channel, passes its deadline (killed) or keeps a speed test waiting (killed, its case to
    // be set aside).
    void answer_records();
    // Ends it and its runner, and gives back what they held: how it ended.
    Ended end_process();
    // Its time outside its cases goes to its stage; the trace records it.
    void count_and_trace(const ExitStatus& status);
    const ProcessOutcome& outcome() const { return seen_; }

private:
    void answer(const std::string& line);
    void note_ready();
    void start_case(const std::string& id);
    void answer_gpu(const nlohmann::json& record);
    void answer_counters(const nlohmann::json& record);
    bool counters_wanted() const;
    void take_counters(Seconds patience);
    void take_result(const nlohmann::json& record);
    bool reruns_after_launch_failure(const nlohmann::json& record, const CaseResult& result, std::size_t current);
    void mark_hidden_start();
    void change_gpu(GpuGate::Use use);
    void case_ended(const CasePlan& c);
    bool may_keep_speed_test_waiting() const;
    Clock::time_point next_look() const;
    void not_the_case_time(Clock::time_point asked);

    CaseRunner& case_runner_;
    const RunOptions& options_;
    const std::vector<CasePlan>& cases_;
    RunResult& run_;
    ChildProcess& child_;
    ChildProcess* runner_;  // the submission's runner beside it, or null
    const std::string& token_;
    const ProcessPlan& plan_;
    const std::vector<std::string>& launcher_;
    const RunMode mode_;
    const std::string tool_name_;
    const bool answers_gpu_requests_;
    const bool reads_counters_;
    const double startup_seconds_;
    // Plain runs only: under a tool a case's GPU work is slow by nature, and a profile has the GPU alone anyway.
    const bool may_set_aside_;

    GpuGate::Hold gpu_;                    // what this process holds of a shared GPU
    std::optional<MachineLock> counters_;  // the machine's turn at the GPU's counters, while the harness has it
    std::optional<Clock::time_point> alone_since_;
    // Whether the counters were held in the turn alone now running (a profile made in a speed test's turn), and
    // whether from its start (a turn asked for the counters' work alone).
    bool counters_in_turn_ = false;
    bool counters_from_start_ = false;
    Clock::time_point shared_since_;
    const Clock::time_point process_started_;
    Clock::time_point case_started_;
    double waited_ = 0.0, in_cases_ = 0.0;  // of this process's time
    // Seconds from its start to its ready record: CUDA's start, a tool's.
    std::optional<double> ready_after_;
    double waited_before_ready_ = 0.0;  // of those, waiting for the GPU (its context is made holding it shared)
    Clock::time_point deadline_;
    bool killed_at_deadline_ = false;
    std::size_t deferred_to_round_ = no_case;  // the speed test declined its counters for a round of profiles
    ProcessOutcome seen_;
};

CaseRunner::ProcessWatch::ProcessWatch(CaseRunner& case_runner, const Harness& harness, const ProcessPlan& plan,
                                       const std::vector<std::string>& launcher, RunMode mode)
    : case_runner_(case_runner),
      options_(case_runner.options_),
      cases_(case_runner.cases_),
      run_(case_runner.run_),
      child_(*harness.child),
      runner_(harness.runner.get()),
      token_(harness.token),
      plan_(plan),
      launcher_(launcher),
      mode_(mode),
      tool_name_(mode.tool.empty() ? "none" : mode.tool),
      answers_gpu_requests_(case_runner.gpu_requests_answered(mode)),
      reads_counters_(case_runner.counters_read(launcher)),
      startup_seconds_(startup_seconds(case_runner.options_, launcher)),
      may_set_aside_(case_runner.options_.gpu_gate != nullptr && launcher.empty() && !mode.profile),
      gpu_(case_runner.options_.gpu_gate),
      process_started_(harness.started),
      case_started_(process_started_),
      deadline_(after(startup_seconds_)) {}

CaseRunner::Ended CaseRunner::run_process_once(const std::vector<std::size_t>& left,
                                               const std::vector<std::string>& launcher, RunMode mode) {
    const ProcessPlan plan = plan_process(left, launcher, mode);
    Harness harness = start_harness(plan.plan, launcher, mode);
    ProcessWatch watch(*this, harness, plan, launcher, mode);
    watch.answer_records();
    const Ended ended = watch.end_process();
    watch.count_and_trace(ended.status);
    if (mode.case_markers) {
        keep_case_outputs(harness.child->output(), plan.marker);
    }
    file_process_output(plan, watch.outcome(), harness, ended, mode);
    settle_after_process(left, watch.outcome(), ended.status, mode, startup_seconds(options_, launcher));
    return ended;
}

CaseRunner::ProcessPlan CaseRunner::plan_process(const std::vector<std::size_t>& left,
                                                 const std::vector<std::string>& launcher, RunMode mode) const {
    // Visible cases come first; what the program prints from the first hidden case on is the hidden output.
    const auto first_hidden = std::find_if(left.begin(), left.end(),
                                           [&](std::size_t i) { return cases_[i].visibility == Visibility::hidden; });
    ProcessPlan process;
    process.starts_hidden = first_hidden == left.begin();
    process.switches = first_hidden != left.end() && !process.starts_hidden;
    for (const std::size_t i : left) {
        process.cases.push_back(&cases_[i]);
    }
    const std::string hidden_from = process.switches ? cases_[*first_hidden].id : std::string();
    // A marker the submission cannot print by chance or by design: it never sees it.
    process.marker = mode.case_markers ? "cugrade-case-" + make_token() : std::string();
    process.plan = plan_for(process.cases, launcher, mode, process.marker);
    if (process.switches) {
        process.plan["hidden_from"] = hidden_from;
    }
    return process;
}

void CaseRunner::ProcessWatch::answer_records() {
    std::string line;
    while (true) {
        // With a runner beside it, both are read: the runner's output is drained every 10 ms.
        const auto next = child_.next_line(line, runner_ ? std::min(next_look(), after(0.01)) : next_look());
        if (runner_) {
            runner_->drain();
        }
        if (next == ChildProcess::Next::deadline && Clock::now() < deadline_) {
            if (may_keep_speed_test_waiting() && gpu_.keeps_speed_test_waiting()) {
                child_.kill_group();
                seen_.set_aside_now = true;
                break;
            }
            continue;
        }
        if (next == ChildProcess::Next::deadline) {
            child_.kill_group();
            killed_at_deadline_ = true;
            break;
        }
        if (next == ChildProcess::Next::closed) {
            break;
        }
        answer(line);
    }
}

void CaseRunner::ProcessWatch::answer(const std::string& line) {
    const auto record = nlohmann::json::parse(line, nullptr, false);
    if (!record.is_object() || !record.contains("event")) {
        return;  // not the harness's: nothing but well-formed records count
    }
    if (!record.contains("token") || !record["token"].is_string() || record["token"].get<std::string>() != token_) {
        ++run_.forged_records;
        return;
    }
    const std::string event = record.value("event", "");
    const std::string id = record.value("case", "");
    auto& index_of = case_runner_.index_of_;
    const std::size_t current = seen_.current;
    if (event == "ready") {
        note_ready();
        add_protections(run_.protections, protections_of(record));
    } else if (event == "start" && index_of.count(id) != 0 && !case_runner_.done_[index_of[id]]) {
        start_case(id);
    } else if (event == "gpu" && answers_gpu_requests_) {
        answer_gpu(record);
    } else if (event == "counters" && reads_counters_) {
        answer_counters(record);
    } else if (event == "result" && current != no_case && id == cases_[current].id) {
        take_result(record);
    } else if (event == "hidden_cases" && plan_.switches && !seen_.printed_before_hidden && current == no_case) {
        mark_hidden_start();
    } else if (event == "fatal") {
        seen_.fatal = record.value("detail", "the harness stopped");
    }
}

void CaseRunner::ProcessWatch::note_ready() {
    if (!ready_after_) {
        ready_after_ = Seconds(Clock::now() - process_started_).count();
        waited_before_ready_ = waited_;
    }
}

void CaseRunner::ProcessWatch::start_case(const std::string& id) {
    seen_.current = case_runner_.index_of_[id];
    seen_.started_any = true;
    gpu_.set_label(options_.trace_label + " " + id + " " + tool_name_);
    deadline_ = after(cases_[seen_.current].case_seconds);
    case_started_ = Clock::now();
}

void CaseRunner::ProcessWatch::answer_gpu(const nlohmann::json& record) {
    const GpuGate::Use wanted = requested_use(record);
    const auto asked = Clock::now();
    change_gpu(wanted);
    not_the_case_time(asked);
    if (wanted != GpuGate::Use::none) {
        child_.reply(std::string(1, protocol::gpu_granted));
    }
}

void CaseRunner::ProcessWatch::answer_counters(const nlohmann::json& record) {
    const std::string use = record.value("use", "");
    const bool asks = use == "try" || use == "take";
    const bool wanted = counters_wanted();
    if (asks && wanted && !counters_ && case_runner_.counters_in_rounds()) {
        // Profiled once the submission's cases are graded, in a round of profiles (profile_case): a batch's
        // with other submissions' speed tests, `check`'s of its own.
        deferred_to_round_ = seen_.current;
        child_.reply(std::string(1, protocol::counters_unwanted));
        return;
    }
    if (asks && wanted && use == "try" && !counters_) {
        // Asked holding the GPU alone: a turn that is not free now is refused at once, since waiting for
        // it here would keep every other submission waiting too.
        take_counters(Seconds(0));
    } else if (asks && wanted && !counters_) {
        // Profiles take turns on a machine (Nsight Compute's and other batches' too), holding nothing of
        // the GPU while they wait.
        change_gpu(GpuGate::Use::none);
        const auto asked = Clock::now();
        take_counters(Seconds(options_.profile_wait_seconds));
        not_the_case_time(asked);
    }
    if (asks) {
        counters_in_turn_ = counters_in_turn_ || (counters_ && alone_since_);
        child_.reply(std::string(1, !wanted     ? protocol::counters_unwanted
                                    : counters_ ? protocol::counters_granted
                                                : protocol::counters_refused));
    } else if (use == "give") {
        counters_.reset();
    }
}

bool CaseRunner::ProcessWatch::counters_wanted() const {
    const std::size_t current = seen_.current;
    // Not wanted where a smaller case has failed already (the rule profile_case applies once all have run),
    // or seems to hang: set aside, it has no verdict yet, and will time out alone as it did here.
    const bool smaller_set_aside =
        std::ranges::any_of(std::views::iota(std::size_t{0}, cases_.size()),
                            [&](std::size_t j) { return case_runner_.set_aside_[j] && !cases_[j].timed; });
    // Nor where the same code's counters were read already: profile_case diagnoses from those.
    const bool read_before = current != no_case && options_.same_code_profiles != nullptr &&
                             options_.same_code_profiles->find(options_.same_code, cases_[current].id);
    return counters_.has_value() ||
           (!read_before && !smaller_set_aside && !smaller_case_failed(cases_, run_.cases, case_runner_.done_));
}

// The machine's turn at the counters, waiting for it at most `patience`.
void CaseRunner::ProcessWatch::take_counters(Seconds patience) {
    try {
        counters_.emplace(profiler_lock_file(), patience);
    } catch (const std::runtime_error&) {
        // No turn to be had (the lock's file is unusable): the profile is refused, not the case.
    }
    if (counters_ && !counters_->held()) {
        counters_.reset();
    }
}

void CaseRunner::ProcessWatch::take_result(const nlohmann::json& record) {
    const std::size_t current = seen_.current;
    change_gpu(GpuGate::Use::none);
    counters_.reset();
    case_ended(cases_[current]);
    CaseResult result = result_of(record);
    if (deferred_to_round_ == current && result.measurements.is_object()) {
        result.measurements["kernel_profile"] = {{"deferred", true}};
    }
    if (reruns_after_launch_failure(record, result, current)) {
        case_runner_.rerun_after_launch_failure_[current] = true;  // left undecided: the next process runs it first
        if (options_.trace != nullptr) {
            options_.trace->record({{"event", "launch_failure_rerun"},
                                    {"submission", options_.trace_label},
                                    {"case", cases_[current].id},
                                    {"detail", result.detail}});
        }
    } else {
        case_runner_.settle(current, std::move(result));
    }
    seen_.current = no_case;
    deadline_ = after(startup_seconds_);
}

bool CaseRunner::ProcessWatch::reruns_after_launch_failure(const nlohmann::json& record, const CaseResult& result,
                                                           std::size_t current) {
    return mode_.rerun_launch_failures && result.status == Status::cuda_error &&
           record.value("fault", "") == protocol::fault_launch_failure &&
           !case_runner_.rerun_after_launch_failure_[current] &&
           case_runner_.launch_failure_reruns_left_->fetch_sub(1) > 0;
}

void CaseRunner::ProcessWatch::mark_hidden_start() {
    child_.drain();
    if (runner_) {
        runner_->drain();
    }
    seen_.printed_before_hidden = {child_.output().size(), runner_ ? runner_->output().size() : 0};
    seen_.truncated_before_hidden = child_.output_truncated() || (runner_ && runner_->output_truncated());
    child_.reply(std::string(1, protocol::output_drained));
}

// Every change of what it holds goes through here: a trace records each time it had the GPU alone.
void CaseRunner::ProcessWatch::change_gpu(GpuGate::Use use) {
    if (gpu_.held() == use) {
        return;
    }
    if (alone_since_ && options_.trace != nullptr) {
        const GpuGate::Grant& grant = gpu_.last_grant();
        options_.trace->record({{"event", "alone"},
                                {"submission", options_.trace_label},
                                {"tool", tool_name_},
                                {"case", seen_.current != no_case ? cases_[seen_.current].id : std::string()},
                                {"counters", counters_.has_value() || counters_in_turn_},
                                {"counters_from_start", counters_from_start_},
                                {"held", Seconds(Clock::now() - *alone_since_).count()},
                                {"waited", grant.waited_seconds},
                                {"last_to_leave", grant.last_to_leave},
                                {"last_to_leave_held", grant.last_to_leave_seconds}});
    }
    alone_since_.reset();
    counters_in_turn_ = false;
    gpu_.change(use);
    if (use == GpuGate::Use::exclusive) {
        alone_since_ = Clock::now();
        counters_from_start_ = counters_.has_value();
    } else if (use == GpuGate::Use::shared) {
        shared_since_ = Clock::now();
    }
}

void CaseRunner::ProcessWatch::case_ended(const CasePlan& c) {
    const double took = Seconds(Clock::now() - case_started_).count();
    in_cases_ += took;
    case_runner_.stage_of(c) += took;
    if (options_.trace != nullptr) {
        options_.trace->record({{"event", "case"},
                                {"submission", options_.trace_label},
                                {"tool", tool_name_},
                                {"case", c.id},
                                {"seconds", took}});
    }
}

bool CaseRunner::ProcessWatch::may_keep_speed_test_waiting() const {
    return may_set_aside_ && seen_.current != no_case && !case_runner_.rerun_when_quiet_[seen_.current] &&
           gpu_.held() == GpuGate::Use::shared;
}

// When to look whether the running case keeps a speed test waiting: once its GPU work has held the GPU past
// the gate's patience, then every 0.1 s.
Clock::time_point CaseRunner::ProcessWatch::next_look() const {
    if (!may_keep_speed_test_waiting()) {
        return deadline_;
    }
    return std::min(deadline_, std::max(shared_since_ + options_.gpu_gate->patience(), after(0.1)));
}

// Waiting for the GPU (or a turn at its counters) since `asked` is not the case's time.
void CaseRunner::ProcessWatch::not_the_case_time(Clock::time_point asked) {
    const auto waited_for = Clock::now() - asked;
    const double wait = Seconds(waited_for).count();
    waited_ += wait;
    run_.seconds.gpu_wait += wait;
    deadline_ += waited_for;
    if (seen_.current != no_case) {
        case_started_ += waited_for;
    }
}

CaseRunner::Ended CaseRunner::ProcessWatch::end_process() {
    counters_.reset();
    if (seen_.current != no_case) {
        case_ended(cases_[seen_.current]);
    }
    ExitStatus status = child_.finish(after(5.0));
    // What it held of the GPU is free once the process is gone: a killed kernel's context goes with it.
    change_gpu(GpuGate::Use::none);
    status.timed_out = status.timed_out || killed_at_deadline_;
    std::string output = child_.output();
    bool truncated = child_.output_truncated();
    if (runner_) {
        // The harness has closed its end: a runner that does not end now is killed.
        if (killed_at_deadline_ || seen_.set_aside_now) {
            runner_->kill_group();
        }
        ExitStatus runner_status = runner_->finish(after(5.0));
        runner_status.timed_out = runner_status.timed_out || killed_at_deadline_;
        output += runner_->output();
        truncated = truncated || runner_->output_truncated();
        // What became of the case comes from the runner when it was the runner that ended.
        if (status.exited() && status.code == protocol::exit_runner_gone) {
            status = runner_status;
        }
    }
    return {status, output, truncated};
}

void CaseRunner::ProcessWatch::count_and_trace(const ExitStatus& status) {
    // compute-sanitizer's own start and end (it instruments every module CUDA loads) are the race check's cost.
    const double outside_cases = std::max(0.0, Seconds(Clock::now() - process_started_).count() - in_cases_ - waited_);
    (launcher_.empty() ? run_.seconds.startup : run_.seconds.race_check) += outside_cases;
    if (options_.trace == nullptr) {
        return;
    }
    options_.trace->record(
        {{"submission", options_.trace_label},
         {"tool", tool_name_},
         {"cases", plan_.cases.size()},
         {"first_case", plan_.cases.front()->id},
         {"seconds", Seconds(Clock::now() - process_started_).count()},
         {"in_cases", in_cases_},
         {"waited_for_gpu", waited_},
         {"ready_after", ready_after_.value_or(-1.0)},
         {"waited_before_ready", waited_before_ready_},
         {"cpu", child_.cpu_seconds_used()},
         {"runner_cpu", runner_ ? runner_->cpu_seconds_used() : 0.0},
         {"ended", seen_.set_aside_now ? std::string("stopped: its case set aside") : status.describe()}});
    if (seen_.set_aside_now) {
        options_.trace->record({{"event", "set_aside"},
                                {"submission", options_.trace_label},
                                {"case", cases_[seen_.current].id},
                                {"held", Seconds(Clock::now() - shared_since_).count()}});
    }
}

void CaseRunner::keep_case_outputs(const std::string& printed, const std::string& marker) {
    MarkedOutput split = split_at_markers(printed, marker);
    for (std::size_t position = 0; position < split.order.size(); ++position) {
        const std::string& id = split.order[position];
        if (const auto found = index_of_.find(id); found != index_of_.end()) {
            case_output_[found->second] = {split.by_case[id], run_.processes, static_cast<int>(position)};
        }
    }
}

void CaseRunner::file_process_output(const ProcessPlan& plan, const ProcessOutcome& seen, const Harness& harness,
                                     const Ended& ended, RunMode mode) {
    const auto file_output = [&](ProgramOutput& stream, const std::string& marked_text, bool text_truncated) {
        const std::string text = mode.case_markers ? split_at_markers(marked_text, plan.marker).unmarked : marked_text;
        keep_output(stream, text, text_truncated, options_.output_limit);
    };
    if (seen.printed_before_hidden) {
        const auto [checker_part, runner_part] = *seen.printed_before_hidden;
        const std::string& checker_output = harness.child->output();
        const std::string runner_output = harness.runner ? harness.runner->output() : std::string();
        file_output(run_.output, checker_output.substr(0, checker_part) + runner_output.substr(0, runner_part),
                    seen.truncated_before_hidden);
        file_output(run_.hidden_output, checker_output.substr(checker_part) + runner_output.substr(runner_part),
                    ended.truncated);
    } else {
        file_output(plan.starts_hidden ? run_.hidden_output : run_.output, ended.output, ended.truncated);
    }
}

void CaseRunner::settle_after_process(const std::vector<std::size_t>& left, const ProcessOutcome& seen,
                                      const ExitStatus& status, RunMode mode, double startup_seconds) {
    const std::size_t current = seen.current;
    if (current != no_case && seen.set_aside_now) {
        set_aside_[current] = true;
    } else if (current != no_case) {
        settle(current, interrupted(status, cases_[current].case_seconds, mode.tool));
    } else if (!seen.started_any) {
        // It ended before its first case: whatever stopped it would stop every restart too.
        const CaseResult result = not_started(seen.fatal, status, mode.tool, startup_seconds);
        for (const std::size_t i : left) {
            if (!done_[i]) {
                settle(i, result);
            }
        }
    }
}

double& CaseRunner::stage_of(const CasePlan& c) {
    // A run under a tool counts as its stage as a whole (sanitizer_checks.cpp), not case by case.
    return c.timed ? run_.seconds.speed : run_.seconds.correctness;
}

}  // namespace cugrade
