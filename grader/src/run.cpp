#include "cugrade/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "access_width.hpp"
#include "answer_explanation.hpp"
#include "cpu_fault.hpp"
#include "machine_lock.hpp"
#include "cugrade/process.hpp"
#include "cugrade/speed_profile.hpp"
#include "protocol.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

using Seconds = std::chrono::duration<double>;

Clock::time_point after(double seconds) { return Clock::now() + std::chrono::duration_cast<Clock::duration>(Seconds(seconds)); }

// The machine's one lock on the GPUs' performance counters, for every profile of every cugrade: Nsight Compute's
// processes and the checkers' own.
fs::path profiler_lock_file() { return fs::temp_directory_path() / "cugrade-gpu-counters.lock"; }

// A secret for one harness process: records that lack it are not the harness's.
std::string make_token() {
    std::random_device random;
    std::string token;
    for (int i = 0; i < 4; ++i) {
        token += fmt::format("{:08x}", random());
    }
    return token;
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

// The checker's environment. It replays all of a submission's work, and does its own, on one stream at a time, so
// one hardware work queue is all its context needs; the driver makes contexts one at a time for the whole GPU, and
// one with a single queue in about a third of the time of the default eight (docs/performance.md), which is what a
// class's harness processes wait for.
std::vector<std::pair<std::string, std::string>> checker_environment(const RunOptions& options) {
    auto environment = options.environment;
    environment.emplace_back("CUDA_DEVICE_MAX_CONNECTIONS", "1");
    return environment;
}

}  // namespace

nlohmann::json make_plan(const std::vector<const CasePlan*>& cases, bool skip_exit_handlers,
                         const fs::path& device_code) {
    nlohmann::json plan = {{"cases", nlohmann::json::array()},
                           {"deny_processes", true},
                           {"skip_exit_handlers", skip_exit_handlers}};
    if (!device_code.empty()) {
        plan["device_code"] = device_code.string();
    }
    for (const CasePlan* c : cases) {
        plan["cases"].push_back(static_cast<const plan::Case&>(*c));
    }
    return plan;
}

namespace {

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
};

// What a process printed, split at the harness's case markers (a line "MARKER ID", printed as case ID starts): each
// case's part, and the output without the markers.
struct MarkedOutput {
    std::map<std::string, std::string> by_case;
    std::vector<std::string> order;  // the cases, as they started
    std::string unmarked;
};

MarkedOutput split_at_markers(const std::string& output, const std::string& marker) {
    MarkedOutput split;
    const std::string tag = marker + " ";
    std::string* current = nullptr;
    std::size_t line_start = 0;
    while (line_start < output.size()) {
        std::size_t line_end = output.find('\n', line_start);
        line_end = line_end == std::string::npos ? output.size() : line_end + 1;
        const std::string_view line(output.data() + line_start, line_end - line_start);
        if (const std::size_t at = line.find(tag); at != std::string_view::npos) {
            // Text the program printed before the marker on the same line is the case before's.
            const std::string_view before = line.substr(0, at);
            split.unmarked += before;
            if (current != nullptr) {
                *current += before;
            }
            std::string id(line.substr(at + tag.size()));
            while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) {
                id.pop_back();
            }
            split.order.push_back(id);
            current = &split.by_case[id];
        } else {
            split.unmarked += line;
            if (current != nullptr) {
                *current += line;
            }
        }
        line_start = line_end;
    }
    return split;
}

// Runs cases in harness processes, restarting after each failure, and records what became of every case.
class CaseRunner {
public:
    CaseRunner(const fs::path& program, const std::vector<CasePlan>& cases, const RunOptions& options)
        : program_(fs::absolute(program)),
          cases_(cases),
          options_(options),
          done_(cases.size()),
          set_aside_(cases.size()),
          rerun_when_quiet_(cases.size()) {
        run_.cases.resize(cases.size());
        for (std::size_t i = 0; i < cases.size(); ++i) {
            index_of_[cases[i].id] = i;
        }
    }

    struct Ended {
        ExitStatus status;
        std::string output;  // what it printed
        bool truncated = false;  // past the output limit
    };

    // Runs the given cases until each has a verdict; returns how each process ended, in order.
    std::vector<Ended> run(const std::vector<std::size_t>& indices, const std::vector<std::string>& launcher,
                           RunMode mode = {}) {
        std::vector<Ended> processes;
        while (true) {
            for (auto left = remaining(indices); !left.empty(); left = remaining(indices)) {
                processes.push_back(run_process_once(left, launcher, mode));
            }
            std::size_t aside = 0;
            for (const std::size_t i : indices) {
                aside += set_aside_[i] ? 1 : 0;
            }
            if (aside == 0) {
                return processes;
            }
            // The cases set aside run again once nothing else is graded on the GPU, and are not set aside twice.
            const double waited = options_.gpu_gate->wait_until_quiet(options_.holds_gpu_place);
            run_.seconds.gpu_wait += waited;
            if (options_.trace != nullptr) {
                options_.trace->record({{"event", "quiet"},
                                        {"submission", options_.trace_label},
                                        {"cases", aside},
                                        {"waited", waited}});
            }
            for (const std::size_t i : indices) {
                if (set_aside_[i]) {
                    set_aside_[i] = false;
                    rerun_when_quiet_[i] = true;
                }
            }
        }
    }

    void settle(std::size_t i, CaseResult result) {
        run_.cases[i] = std::move(result);
        done_[i] = true;
    }

    // Takes back the verdicts of these cases, so that they run again.
    void reopen(const std::vector<std::size_t>& indices) {
        for (const std::size_t i : indices) {
            run_.cases[i] = {};
            done_[i] = false;
        }
    }

    RunResult& result() { return run_; }

    // What case i printed (tool reports included) in runs with case markers, and where it ran: the process (its
    // number in this runner) and its place among that process's cases. The last run's, where it ran again.
    struct CaseOutput {
        std::string text;
        int process = -1;
        int position = -1;
    };
    CaseOutput case_output(std::size_t i) const {
        const auto found = case_output_.find(i);
        return found != case_output_.end() ? found->second : CaseOutput{};
    }

private:
    std::vector<std::size_t> remaining(const std::vector<std::size_t>& indices) const {
        std::vector<std::size_t> left;
        for (const std::size_t i : indices) {
            if (!done_[i] && !set_aside_[i]) {
                left.push_back(i);
            }
        }
        return left;
    }

    Ended run_process_once(const std::vector<std::size_t>& left, const std::vector<std::string>& launcher,
                           RunMode mode) {
        // Visible cases come first; what the program prints from the first hidden case on is the hidden output.
        const auto first_hidden = std::find_if(left.begin(), left.end(), [&](std::size_t i) {
            return cases_[i].visibility == Visibility::hidden;
        });
        const bool starts_hidden = first_hidden == left.begin();
        const bool switches = first_hidden != left.end() && !starts_hidden;
        std::vector<const CasePlan*> plan_cases;
        for (const std::size_t i : left) {
            plan_cases.push_back(&cases_[i]);
        }
        const fs::path plan_file = options_.work_dir / fmt::format("plan-{}.json", run_.processes + 1);
        nlohmann::json plan = make_plan(plan_cases, /*skip_exit_handlers=*/launcher.empty(), options_.device_code);
        // A marker the submission cannot print by chance or by design: it never sees it.
        const std::string marker = mode.case_markers ? "cugrade-case-" + make_token() : std::string();
        if (mode.case_markers) {
            plan["case_marker"] = marker;
        }
        // A profiled run asks for the GPU alone around its profiled call, batch or not.
        const bool answers_gpu_requests = options_.gpu_gate != nullptr || mode.profile;
        plan["gpu_gate"] = answers_gpu_requests;
        plan["bare_buffers"] = mode.bare_buffers;
        plan["profile"] = mode.profile;
        // Counters are read in plain runs only: a sanitizer's instrumentation would be what they measure.
        const bool reads_counters = options_.diagnose && !options_.cupti_library.empty() && launcher.empty();
        if (reads_counters) {
            plan["counter_profiler"] = options_.cupti_library.string();
        }
        if (switches) {
            plan["hidden_from"] = cases_[*first_hidden].id;
        }
        std::ofstream(plan_file) << plan.dump(2);

        // The submission's host code runs in a runner of its own, without a GPU, over a channel to the harness.
        std::unique_ptr<ChildProcess> runner;
        int runner_channel[2] = {-1, -1};
        if (!options_.runner.empty()) {
            if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, runner_channel) != 0) {
                throw std::runtime_error(fmt::format("cannot make a channel for the runner: {}", std::strerror(errno)));
            }
            ProcessOptions runner_process;
            runner_process.argv = {options_.runner.string()};
            runner_process.working_directory = options_.work_dir;
            runner_process.peer_fd = runner_channel[1];
            runner_process.peer_fd_env = protocol::runner_fd_env;
            runner_process.sandbox = options_.sandbox;
            runner_process.sandbox.gpu = false;
            runner_process.sandbox.work_dir = options_.work_dir;
            runner_process.output_limit = options_.output_limit;
            runner = std::make_unique<ChildProcess>(runner_process);
            ::close(runner_channel[1]);
        }

        const std::string token = make_token();
        ProcessOptions process;
        process.argv = launcher;
        process.argv.push_back(program_.string());
        process.argv.push_back(plan_file.string());
        process.working_directory = options_.work_dir;
        process.result_channel = true;
        process.environment = checker_environment(options_);
        process.environment.emplace_back(protocol::token_env, token);
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
        if (reads_counters) {
            process.sandbox.readable.push_back(options_.cupti_library.parent_path());  // CUPTI loads its neighbours
        }
        process.output_limit = options_.output_limit;
        if (runner) {
            process.peer_fd = runner_channel[0];
            process.peer_fd_env = protocol::runner_fd_env;
        }
        ChildProcess child(process);
        if (runner) {
            ::close(runner_channel[0]);
        }
        ++run_.processes;

        GpuGate::Hold gpu(options_.gpu_gate);  // what this process holds of a shared GPU
        std::optional<MachineLock> counters;  // the machine's turn at the GPU's counters, while the harness has it
        constexpr std::size_t none = static_cast<std::size_t>(-1);
        std::size_t current = none;  // the case the harness is running
        const std::string tool_name = mode.tool.empty() ? "none" : mode.tool;
        std::optional<Clock::time_point> alone_since;
        // Whether the counters were held in the turn alone now running (a profile made in a speed test's turn), and
        // whether from its start (a turn asked for the counters' work alone).
        bool counters_in_turn = false;
        bool counters_from_start = false;
        Clock::time_point shared_since;
        // Every change of what it holds goes through here: a trace records each time it had the GPU alone.
        const auto change_gpu = [&](GpuGate::Use use) {
            if (gpu.held() == use) {
                return;
            }
            if (alone_since && options_.trace != nullptr) {
                const GpuGate::Grant& grant = gpu.last_grant();
                options_.trace->record({{"event", "alone"},
                                        {"submission", options_.trace_label},
                                        {"tool", tool_name},
                                        {"case", current != none ? cases_[current].id : std::string()},
                                        {"counters", counters.has_value() || counters_in_turn},
                                        {"counters_from_start", counters_from_start},
                                        {"held", Seconds(Clock::now() - *alone_since).count()},
                                        {"waited", grant.waited_seconds},
                                        {"last_to_leave", grant.last_to_leave},
                                        {"last_to_leave_held", grant.last_to_leave_seconds}});
            }
            alone_since.reset();
            counters_in_turn = false;
            gpu.change(use);
            if (use == GpuGate::Use::exclusive) {
                alone_since = Clock::now();
                counters_from_start = counters.has_value();
            } else if (use == GpuGate::Use::shared) {
                shared_since = Clock::now();
            }
        };
        const auto process_started = Clock::now();
        auto case_started = process_started;
        double waited = 0.0, in_cases = 0.0;  // of this process's time
        std::optional<double> ready_after;  // seconds from its start to its ready record: CUDA's start, a tool's
        double waited_before_ready = 0.0;   // of those, waiting for the GPU (its context is made holding it shared)
        const auto case_ended = [&](const CasePlan& c) {
            const double took = Seconds(Clock::now() - case_started).count();
            in_cases += took;
            stage_of(c) += took;
            if (options_.trace != nullptr) {
                options_.trace->record({{"event", "case"},
                                        {"submission", options_.trace_label},
                                        {"tool", tool_name},
                                        {"case", c.id},
                                        {"seconds", took}});
            }
        };
        std::optional<std::string> fatal;
        bool started_any = false;
        bool killed_at_deadline = false;
        // How much each process had printed when the hidden cases began (protocol.hpp).
        std::optional<std::pair<std::size_t, std::size_t>> printed_before_hidden;
        bool truncated_before_hidden = false;
        const double startup_seconds = launcher.empty() ? options_.startup_seconds : options_.sanitizer_startup_seconds;
        auto deadline = after(startup_seconds);
        bool set_aside_now = false;  // its case kept a speed test waiting: stopped, to run again when the GPU is quiet
        // Plain runs only: under a tool a case's GPU work is slow by nature, and a profile has the GPU alone anyway.
        const bool may_set_aside = options_.gpu_gate != nullptr && launcher.empty() && !mode.profile;
        const auto may_keep_speed_test_waiting = [&] {
            return may_set_aside && current != none && !rerun_when_quiet_[current] &&
                   gpu.held() == GpuGate::Use::shared;
        };
        // When to look whether the running case keeps a speed test waiting: once its GPU work has held the GPU past
        // the gate's patience, then every 0.1 s.
        const auto next_look = [&] {
            if (!may_keep_speed_test_waiting()) {
                return deadline;
            }
            return std::min(deadline, std::max(shared_since + options_.gpu_gate->patience(), after(0.1)));
        };
        // Waiting for the GPU (or a turn at its counters) since `asked` is not the case's time.
        const auto not_the_case_time = [&](Clock::time_point asked) {
            const auto waited_for = Clock::now() - asked;
            const double wait = Seconds(waited_for).count();
            waited += wait;
            run_.seconds.gpu_wait += wait;
            deadline += waited_for;
            if (current != none) {
                case_started += waited_for;
            }
        };
        std::string line;
        while (true) {
            // With a runner beside it, both are read: the runner's output is drained every 10 ms.
            const auto next = child.next_line(line, runner ? std::min(next_look(), after(0.01)) : next_look());
            if (runner) {
                runner->drain();
            }
            if (next == ChildProcess::Next::deadline && Clock::now() < deadline) {
                if (may_keep_speed_test_waiting() && gpu.keeps_speed_test_waiting()) {
                    child.kill_group();
                    set_aside_now = true;
                    break;
                }
                continue;
            }
            if (next == ChildProcess::Next::deadline) {
                child.kill_group();
                killed_at_deadline = true;
                break;
            }
            if (next == ChildProcess::Next::closed) {
                break;
            }
            const auto record = nlohmann::json::parse(line, nullptr, false);
            if (!record.is_object() || !record.contains("event")) {
                continue;  // not the harness's: nothing but well-formed records count
            }
            if (!record.contains("token") || !record["token"].is_string() ||
                record["token"].get<std::string>() != token) {
                ++run_.forged_records;
                continue;
            }
            const std::string event = record.value("event", "");
            const std::string id = record.value("case", "");
            if (event == "ready" && !ready_after) {
                ready_after = Seconds(Clock::now() - process_started).count();
                waited_before_ready = waited;
            }
            if (event == "ready" && record.contains("protections") && record["protections"].is_array()) {
                for (const auto& protection : record["protections"]) {
                    if (protection.is_string() &&
                        std::find(run_.protections.begin(), run_.protections.end(), protection.get<std::string>()) ==
                            run_.protections.end()) {
                        run_.protections.push_back(protection.get<std::string>());
                    }
                }
            } else if (event == "start" && index_of_.count(id) != 0 && !done_[index_of_[id]]) {
                current = index_of_[id];
                started_any = true;
                gpu.set_label(options_.trace_label + " " + id + " " + tool_name);
                deadline = after(cases_[current].case_seconds);
                case_started = Clock::now();
            } else if (event == "gpu" && answers_gpu_requests) {
                const std::string use = record.value("use", "");
                const GpuGate::Use wanted = use == "shared"      ? GpuGate::Use::shared
                                            : use == "exclusive" ? GpuGate::Use::exclusive
                                                                 : GpuGate::Use::none;
                const auto asked = Clock::now();
                change_gpu(wanted);
                not_the_case_time(asked);
                if (wanted != GpuGate::Use::none) {
                    child.reply(std::string(1, protocol::gpu_granted));
                }
            } else if (event == "counters" && reads_counters) {
                // The machine's turn at the counters, waiting for it at most `patience`.
                const auto take_counters = [&](Seconds patience) {
                    try {
                        counters.emplace(profiler_lock_file(), patience);
                    } catch (const std::runtime_error&) {
                        // No turn to be had (the lock's file is unusable): the profile is refused, not the case.
                    }
                    if (counters && !counters->held()) {
                        counters.reset();
                    }
                };
                const std::string use = record.value("use", "");
                if (use == "try" && !counters) {
                    // Asked holding the GPU alone: a turn that is not free now is refused at once, since waiting for
                    // it here would keep every other submission waiting too.
                    take_counters(Seconds(0));
                } else if (use == "take" && !counters) {
                    // Profiles take turns on a machine (Nsight Compute's and other batches' too), holding nothing of
                    // the GPU while they wait.
                    change_gpu(GpuGate::Use::none);
                    const auto asked = Clock::now();
                    take_counters(Seconds(options_.profile_wait_seconds));
                    not_the_case_time(asked);
                }
                if (use == "try" || use == "take") {
                    counters_in_turn = counters_in_turn || (counters && alone_since);
                    child.reply(std::string(1, counters ? protocol::counters_granted : protocol::counters_refused));
                } else if (use == "give") {
                    counters.reset();
                }
            } else if (event == "result" && current != none && id == cases_[current].id) {
                change_gpu(GpuGate::Use::none);
                counters.reset();
                case_ended(cases_[current]);
                CaseResult result;
                result.status = status_from_string(record.value("status", "")).value_or(Status::harness_error);
                result.detail = record.value("detail", "");
                if (record.contains("measurements") && record["measurements"].is_object()) {
                    result.measurements = record["measurements"];
                }
                if (result.status == Status::wrong_answer) {
                    result.diagnosis = answer_diagnosis(record);
                }
                settle(current, std::move(result));
                current = none;
                deadline = after(startup_seconds);
            } else if (event == "hidden_cases" && switches && !printed_before_hidden && current == none) {
                child.drain();
                if (runner) {
                    runner->drain();
                }
                printed_before_hidden = {child.output().size(), runner ? runner->output().size() : 0};
                truncated_before_hidden = child.output_truncated() || (runner && runner->output_truncated());
                child.reply(std::string(1, protocol::output_drained));
            } else if (event == "fatal") {
                fatal = record.value("detail", "the harness stopped");
            }
        }
        counters.reset();
        if (current != none) {
            case_ended(cases_[current]);
        }
        ExitStatus status = child.finish(after(5.0));
        // What it held of the GPU is free once the process is gone: a killed kernel's context goes with it.
        change_gpu(GpuGate::Use::none);
        status.timed_out = status.timed_out || killed_at_deadline;
        std::string output = child.output();
        bool truncated = child.output_truncated();
        if (runner) {
            // The harness has closed its end: a runner that does not end now is killed.
            if (killed_at_deadline || set_aside_now) {
                runner->kill_group();
            }
            ExitStatus runner_status = runner->finish(after(5.0));
            runner_status.timed_out = runner_status.timed_out || killed_at_deadline;
            output += runner->output();
            truncated = truncated || runner->output_truncated();
            // What became of the case comes from the runner when it was the runner that ended.
            if (status.exited() && status.code == protocol::exit_runner_gone) {
                status = runner_status;
            }
        }
        // compute-sanitizer's own start and end (it instruments every module CUDA loads) are the race check's cost.
        const double outside_cases = std::max(0.0, Seconds(Clock::now() - process_started).count() - in_cases - waited);
        (launcher.empty() ? run_.seconds.startup : run_.seconds.race_check) += outside_cases;
        if (options_.trace != nullptr) {
            options_.trace->record({{"submission", options_.trace_label},
                                    {"tool", tool_name},
                                    {"cases", plan_cases.size()},
                                    {"first_case", plan_cases.front()->id},
                                    {"seconds", Seconds(Clock::now() - process_started).count()},
                                    {"in_cases", in_cases},
                                    {"waited_for_gpu", waited},
                                    {"ready_after", ready_after.value_or(-1.0)},
                                    {"waited_before_ready", waited_before_ready},
                                    {"cpu", child.cpu_seconds_used()},
                                    {"runner_cpu", runner ? runner->cpu_seconds_used() : 0.0},
                                    {"ended", set_aside_now ? std::string("stopped: its case set aside") : status.describe()}});
            if (set_aside_now) {
                options_.trace->record({{"event", "set_aside"},
                                        {"submission", options_.trace_label},
                                        {"case", cases_[current].id},
                                        {"held", Seconds(Clock::now() - shared_since).count()}});
            }
        }
        if (mode.case_markers) {
            MarkedOutput split = split_at_markers(child.output(), marker);
            for (std::size_t position = 0; position < split.order.size(); ++position) {
                const std::string& id = split.order[position];
                if (const auto found = index_of_.find(id); found != index_of_.end()) {
                    case_output_[found->second] = {split.by_case[id], run_.processes, static_cast<int>(position)};
                }
            }
        }
        const auto file_output = [&](ProgramOutput& stream, const std::string& marked_text, bool text_truncated) {
            const std::string text = mode.case_markers ? split_at_markers(marked_text, marker).unmarked : marked_text;
            const std::size_t room =
                options_.output_limit > stream.text.size() ? options_.output_limit - stream.text.size() : 0;
            stream.text += text.substr(0, room);
            stream.truncated = stream.truncated || text_truncated || text.size() > room;
        };
        if (printed_before_hidden) {
            const auto [checker_part, runner_part] = *printed_before_hidden;
            const std::string runner_output = runner ? runner->output() : std::string();
            file_output(run_.output, child.output().substr(0, checker_part) + runner_output.substr(0, runner_part),
                        truncated_before_hidden);
            file_output(run_.hidden_output, child.output().substr(checker_part) + runner_output.substr(runner_part),
                        truncated);
        } else {
            file_output(starts_hidden ? run_.hidden_output : run_.output, output, truncated);
        }

        if (current != none && set_aside_now) {
            set_aside_[current] = true;
        } else if (current != none) {
            settle(current, interrupted(status, cases_[current].case_seconds, mode.tool));
        } else if (!started_any) {
            // It ended before its first case: whatever stopped it would stop every restart too.
            CaseResult result;
            if (fatal) {
                result = {Status::harness_error, *fatal};
            } else if (!status.limit.empty()) {
                result = {Status::limit_exceeded, fmt::format("the program {} before running any case",
                                                              status.describe())};
            } else if (status.timed_out) {
                result = {Status::timed_out,
                          mode.tool.empty()
                              ? fmt::format("the program did not start its first case within {} s", startup_seconds)
                              : fmt::format("{} stopped after {} s: the program did not start its first case under "
                                            "the tool",
                                            mode.tool, startup_seconds)};
            } else {
                result = {status.signal != 0 ? Status::crashed : Status::exited_early,
                          fmt::format("the program {} before running any case", status.describe())};
            }
            for (const std::size_t i : left) {
                if (!done_[i]) {
                    settle(i, result);
                }
            }
        }
        return {status, output, truncated};
    }

    double& stage_of(const CasePlan& c) {
        return c.race_check ? run_.seconds.race_check : c.timed ? run_.seconds.speed : run_.seconds.correctness;
    }

    fs::path program_;
    const std::vector<CasePlan>& cases_;
    const RunOptions& options_;
    std::vector<bool> done_;
    std::vector<bool> set_aside_;         // stopped while keeping a speed test waiting, to run when the GPU is quiet
    std::vector<bool> rerun_when_quiet_;  // run again after being set aside: never set aside twice
    std::map<std::string, std::size_t> index_of_;
    std::map<std::size_t, CaseOutput> case_output_;
    RunResult run_;
};

}  // namespace

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

namespace {

// The race-check cases under racecheck: a hazard fails the case, whatever its result.
void check_races(CaseRunner& runner, const std::vector<CasePlan>& cases, const std::vector<std::size_t>& race_checked,
                 const RunOptions& options) {
    const std::vector<std::string> racecheck = sanitizer_command(options.compute_sanitizer, SanitizerTool::racecheck);
    const auto sanitizer_found_hazard = [](const ExitStatus& status) {
        return status.exited() && status.code == sanitizer_error_exit_code;
    };
    const auto hazard_reported = [&](const CaseRunner::Ended& ended) {
        return sanitizer_found_hazard(ended.status) || !first_race_report(ended.output).empty();
    };

    // A race found: the cause to report, whether or not it spoiled this run's result; the diagnosis says where it is.
    const auto mark_race = [&](std::size_t i, const std::string& output) {
        CaseResult& result = runner.result().cases[i];
        const std::string also_wrong =
            result.status == Status::wrong_answer ? " (the result was wrong too: " + result.detail + ")" : "";
        result.status = Status::race;
        result.detail = "compute-sanitizer racecheck found a race between threads" + also_wrong;
        result.diagnosis = race_diagnosis(output);
        if (!result.diagnosis) {
            result.diagnosis = Diagnosis{"race", "compute-sanitizer racecheck: a race on shared memory",
                                         "this case", {}, "a __syncthreads() is missing between a write and "
                                         "another thread's read", "", "a race on shared memory (racecheck)",
                                         "barrier"};
        }
        result.diagnosis->scope = "this case";
    };
    // A racy kernel can slow racecheck past the case's limit; a hazard it already reported still decides.
    const auto decides = [&](std::size_t i, bool hazard, const std::string& report) {
        const CaseResult& result = runner.result().cases[i];
        const bool checked = result.status == Status::passed || result.status == Status::wrong_answer;
        return (checked && hazard) || (result.status == Status::timed_out && !report.empty());
    };

    // The race-check cases of each visibility run together under one compute-sanitizer, whose start costs seconds,
    // the harness marking where each case starts in what it prints: a hazard reported within a case's part is that
    // case's, and a case without one that ran before the first report of its process had none. A case after it
    // without a report may have had its report left out (racecheck prints a few reports a process, and may name a
    // race once), so it runs again alone, as every case does where nothing can be told (no part holds the report,
    // or the output was cut).
    std::vector<std::size_t> visible_races, hidden_races;
    for (const std::size_t i : race_checked) {
        (cases[i].visibility == Visibility::hidden ? hidden_races : visible_races).push_back(i);
    }
    std::vector<std::size_t> one_at_a_time;
    for (const auto* together : {&visible_races, &hidden_races}) {
        if (together->size() < 2) {
            one_at_a_time.insert(one_at_a_time.end(), together->begin(), together->end());
            continue;
        }
        const auto processes = runner.run(*together, racecheck, {.tool = "racecheck", .case_markers = true});
        if (std::none_of(processes.begin(), processes.end(), hazard_reported)) {
            continue;
        }
        const bool cut = std::any_of(processes.begin(), processes.end(), [](const auto& p) { return p.truncated; });
        std::map<int, int> first_report;  // by process: the place of its first case with a report
        for (const std::size_t i : *together) {
            const auto part = runner.case_output(i);
            if (part.process >= 0 && !first_race_report(part.text).empty()) {
                const auto [at, added] = first_report.emplace(part.process, part.position);
                at->second = std::min(at->second, part.position);
            }
        }
        if (cut || first_report.empty()) {
            runner.reopen(*together);
            one_at_a_time.insert(one_at_a_time.end(), together->begin(), together->end());
            continue;
        }
        for (const std::size_t i : *together) {
            const auto part = runner.case_output(i);
            const std::string report = first_race_report(part.text);
            const auto first = first_report.find(part.process);
            if (!report.empty()) {
                if (decides(i, true, report)) {
                    mark_race(i, part.text);
                }
            } else if (part.process < 0 || (first != first_report.end() && part.position > first->second)) {
                runner.reopen({i});
                one_at_a_time.push_back(i);
            }
        }
    }
    std::sort(one_at_a_time.begin(), one_at_a_time.end());
    for (const std::size_t i : one_at_a_time) {
        const auto processes = runner.run({i}, racecheck, {.tool = "racecheck"});
        if (processes.empty()) {
            continue;
        }
        const auto& [status, output, truncated] = processes.back();
        if (decides(i, sanitizer_found_hazard(status), first_race_report(output))) {
            mark_race(i, output);
        }
    }
}

// The memory-check cases, once more under memcheck, with the graded run's buffers (guard regions after each output,
// which catch a write just past it; inputs allocated to their size, so that memcheck sees a read past their end): an
// access outside every allocation fails the case as memory_error, whatever its result. The cases of each visibility
// run together under one compute-sanitizer; the case that ended each reporting process is the one it reported, and
// the cases run again one at a time only where that cannot be told.
void check_memory(const fs::path& program, const std::vector<CasePlan>& cases,
                  const std::vector<std::size_t>& memory_checked, const RunOptions& options, RunResult& result) {
    const auto started = Clock::now();
    const std::vector<std::string> memcheck = sanitizer_command(options.compute_sanitizer, SanitizerTool::memcheck);
    CaseRunner runner(program, cases, options);
    const auto error_reported = [](const CaseRunner::Ended& ended) {
        return ended.status.exited() && ended.status.code == sanitizer_error_exit_code;
    };
    const auto flag = [&](std::size_t i, const std::string& output) {
        CaseResult& graded = result.cases[i];
        if (graded.status != Status::passed && graded.status != Status::wrong_answer) {
            return;
        }
        const std::string also_wrong =
            graded.status == Status::wrong_answer ? " (the result was wrong too: " + graded.detail + ")" : "";
        graded.status = Status::memory_error;
        graded.detail = "compute-sanitizer memcheck found an access outside every allocation" + also_wrong;
        graded.diagnosis = first_sanitizer_error(SanitizerTool::memcheck, output, options.student_files);
        if (graded.diagnosis) {
            graded.diagnosis->scope = "this case";
        }
    };
    std::vector<std::size_t> visible_cases, hidden_cases;
    for (const std::size_t i : memory_checked) {
        (cases[i].visibility == Visibility::hidden ? hidden_cases : visible_cases).push_back(i);
    }
    std::vector<std::size_t> one_at_a_time;
    for (const auto* together : {&visible_cases, &hidden_cases}) {
        if (together->empty()) {
            continue;
        }
        const auto processes = runner.run(*together, memcheck, {.tool = "memcheck"});
        std::vector<const CaseRunner::Ended*> reporting;
        for (const auto& process : processes) {
            if (error_reported(process)) {
                reporting.push_back(&process);
            }
        }
        if (reporting.empty()) {
            continue;
        }
        if (together->size() == 1) {
            flag(together->front(), reporting.front()->output);
            continue;
        }
        // Memcheck stops the launch it reports, so the harness sees that call fail, calls the case a CUDA error
        // and ends its process: each reporting process then holds one failed case, its last, in the order run.
        // Where the count differs, each case runs alone to say which it was.
        std::vector<std::size_t> failed;
        for (const std::size_t i : *together) {
            const Status under_memcheck = runner.result().cases[i].status;
            if (under_memcheck != Status::passed && under_memcheck != Status::wrong_answer) {
                failed.push_back(i);
            }
        }
        if (failed.size() == reporting.size()) {
            for (std::size_t k = 0; k < failed.size(); ++k) {
                flag(failed[k], reporting[k]->output);
            }
        } else {
            runner.reopen(*together);
            one_at_a_time.insert(one_at_a_time.end(), together->begin(), together->end());
        }
    }
    std::sort(one_at_a_time.begin(), one_at_a_time.end());
    for (const std::size_t i : one_at_a_time) {
        std::string output;
        bool reported = false;
        for (const auto& process : runner.run({i}, memcheck, {.tool = "memcheck"})) {
            output += process.output;
            reported = reported || error_reported(process);
        }
        if (reported) {
            flag(i, output);
        }
    }
    result.seconds.gpu_wait += runner.result().seconds.gpu_wait;
    result.seconds.race_check += Seconds(Clock::now() - started).count() - runner.result().seconds.gpu_wait;
}

// Where racecheck found a race, a wrong answer elsewhere may be its effect, whatever the answer looks like (a value
// no element holds is what a read before a write gives): the race is the cause each wrong answer's diagnosis names,
// and the harness's reading of the answer stays as evidence.
void put_races_first(const std::vector<CasePlan>& cases, RunResult& result) {
    const auto race = std::find_if(result.cases.begin(), result.cases.end(), [](const CaseResult& r) {
        return r.status == Status::race && r.diagnosis.has_value();
    });
    if (race == result.cases.end()) {
        return;
    }
    for (std::size_t i = 0; i < cases.size(); ++i) {
        CaseResult& r = result.cases[i];
        if (r.status != Status::wrong_answer || cases[i].timed) {
            continue;
        }
        Diagnosis diagnosis = *race->diagnosis;
        diagnosis.scope = "found by the race check; this wrong answer may be its effect";
        if (r.diagnosis) {
            diagnosis.evidence.insert(diagnosis.evidence.begin(), "the answer: " + r.diagnosis->summary);
        }
        r.diagnosis = std::move(diagnosis);
    }
}

bool needs_diagnosis(const CasePlan& plan, Status status) {
    return !plan.timed && !plan.race_check &&
           (status == Status::wrong_answer || status == Status::cuda_error || status == Status::crashed ||
            status == Status::exited_early);
}

// A failing case runs once more, alone, under compute-sanitizer, to find what went wrong: memcheck for a crash, a
// CUDA error or a wrong answer, then initcheck and synccheck for a wrong answer that memcheck does not explain. The
// smallest visible failing case whose wrong answer the harness did not explain is the one, since instrumented code runs many times slower and a student may see
// all of it; a hidden case only when no visible case fails. Its verdict stays that of the graded run: the diagnosis
// goes beside it, and what the reruns print goes nowhere.
void diagnose_failures(const fs::path& program, const std::vector<CasePlan>& cases, const RunOptions& options,
                       RunResult& result) {
    if (options.compute_sanitizer.empty() || !options.diagnose) {
        return;
    }
    std::optional<std::size_t> chosen;
    const auto better = [&](std::size_t i, std::size_t than) {
        const bool visible = cases[i].visibility == Visibility::visible;
        const bool than_visible = cases[than].visibility == Visibility::visible;
        return visible != than_visible ? visible : cases[i].size() < cases[than].size();
    };
    // A wrong answer the harness already explained needs no rerun: its cause is named.
    for (std::size_t i = 0; i < cases.size(); ++i) {
        if (needs_diagnosis(cases[i], result.cases[i].status) && !names_cause(result.cases[i].diagnosis) &&
            (!chosen || better(i, *chosen))) {
            chosen = i;
        }
    }
    if (!chosen) {
        return;
    }
    // The reruns of one grading share one budget, whatever the submission does under the tools.
    const auto started = Clock::now();
    const auto budget_end = after(options.diagnosis_seconds);
    std::vector<CasePlan> reruns = cases;
    RunOptions rerun_options = options;
    CaseRunner runner(program, reruns, rerun_options);
    std::vector<SanitizerTool> tools = {SanitizerTool::memcheck};
    if (result.cases[*chosen].status == Status::wrong_answer) {
        tools.insert(tools.end(), {SanitizerTool::initcheck, SanitizerTool::synccheck});
    }
    const std::string where = cases[*chosen].visibility == Visibility::visible ? "on " + cases[*chosen].id
                                                                                : "on a hidden case";
    for (const SanitizerTool tool : tools) {
        const double left = Seconds(budget_end - Clock::now()).count();
        if (left < 1.0) {
            result.diagnosis_notes.push_back(fmt::format(
                "compute-sanitizer's {} did not run {}: the reruns' {} s were spent", to_string(tool), where,
                options.diagnosis_seconds));
            break;
        }
        reruns[*chosen].case_seconds = std::min(cases[*chosen].case_seconds, left);
        rerun_options.sanitizer_startup_seconds = left;
        runner.reopen({*chosen});
        std::string output;
        bool stopped = false;
        for (const auto& process : runner.run({*chosen}, sanitizer_command(options.compute_sanitizer, tool),
                                              {.bare_buffers = true, .tool = to_string(tool)})) {
            output += process.output;
            stopped = stopped || process.status.timed_out;
        }
        if (auto found = first_sanitizer_error(tool, output, options.student_files)) {
            found->scope = "found " + where;
            result.cases[*chosen].diagnosis = std::move(*found);
            break;
        }
        if (stopped) {
            result.diagnosis_notes.push_back(fmt::format("compute-sanitizer's {} stopped after {:.0f} s {}",
                                                         to_string(tool), Seconds(Clock::now() - started).count(),
                                                         where));
            break;
        }
    }
    result.seconds.gpu_wait += runner.result().seconds.gpu_wait;
    result.seconds.diagnosis -= runner.result().seconds.gpu_wait;
    result.seconds.diagnosis += Seconds(Clock::now() - started).count();
}

// The note for a profile whose turn at the counters did not come in time (they take turns on a machine).
std::string turn_not_come(const RunOptions& options) {
    return fmt::format(
        "the speed test was not profiled: other profiles held the GPU's counters for {} s (they take turns on a "
        "machine){}",
        options.profile_wait_seconds,
        options.gpu_gate != nullptr ? "; `cugrade check` of this submission waits for its turn and profiles it" : "");
}

// What speed test `plan` measured that its diagnosis weighs a profile against, whoever profiled it.
SpeedTestFigures speed_test_figures(const CasePlan& plan, const CaseResult& timed) {
    SpeedTestFigures figures;
    figures.elements = static_cast<double>(plan.size());
    figures.copy_gbps = timed.measurements.value("copy_gbps", 0.0);
    figures.minimum_bytes = timed.measurements.value("bytes", 0.0);
    return figures;
}

// The counters the harness read itself on speed test `i` (exercises/common/counter_profile.hpp), turned into its
// diagnosis, or into a note of why there is none (nothing is returned then); else why Nsight Compute is to be asked:
// the harness read no counters, or could not (what it said). A profile refused its turn is left out, saying so.
std::optional<std::string> diagnose_from_counters(const std::vector<CasePlan>& cases, std::size_t i,
                                                  const RunOptions& options, RunResult& result) {
    CaseResult& timed = result.cases[i];
    const auto profile = timed.measurements.find("kernel_profile");
    if (profile == timed.measurements.end() || !profile->is_object()) {
        return "the harness read no counters";
    }
    const auto note = [&](const std::string& why) {
        result.diagnosis_notes.push_back("the speed test could not be profiled: " + why.substr(0, 300));
    };
    if (profile->value("turn_refused", false)) {
        // Nsight Compute would wait for the same turn again.
        result.diagnosis_notes.push_back(turn_not_come(options));
        return std::nullopt;
    }
    if (const auto problem = profile->find("problem"); problem != profile->end()) {
        // The counters could not be read here, or the passes failed: Nsight Compute tries in a process of its own.
        const std::string why = problem->is_string() ? problem->get<std::string>() : "the harness said nothing of why";
        if (options.nsight_compute.empty()) {
            note(why);
            return std::nullopt;
        }
        return why;
    }
    // The profile ran inside the speed test's process, after its timing: its seconds are the diagnosis's.
    const double profiled = profile->value("setup_seconds", 0.0) + profile->value("seconds", 0.0);
    if (options.trace != nullptr) {
        options.trace->record({{"event", "counters"},
                               {"submission", options.trace_label},
                               {"case", cases[i].id},
                               {"passes", profile->value("passes", 0)},
                               {"setup_seconds", profile->value("setup_seconds", 0.0)},
                               {"seconds", profile->value("seconds", 0.0)},
                               {"steps", profile->value("steps", nlohmann::json::object())}});
    }
    if (profiled > 0) {
        const double moved = std::min(profiled, result.seconds.speed);
        result.seconds.speed -= moved;
        result.seconds.diagnosis += moved;
    }
    try {
        const std::vector<KernelProfile> launches = read_counter_profile(profile->value("launches", nlohmann::json()));
        SpeedTestFigures figures = speed_test_figures(cases[i], timed);
        figures.source = "the GPU's counters";
        figures.access_widths = access_widths_of(options.cuobjdump, options.device_code);
        if (auto found = speed_diagnosis(launches, figures)) {
            found->scope = "found on " + cases[i].id;
            found->tool_output = describe_profile(launches).substr(0, 64 * 1024);
            timed.diagnosis = std::move(*found);
        } else {
            note(launches.empty() ? "the counters saw no kernel of the submission's"
                                  : "the counters measured no time in the submission's kernels");
        }
    } catch (const std::runtime_error& e) {
        note(e.what());
    }
    return std::nullopt;
}

}  // namespace

void profile_case(const fs::path& program, const std::vector<CasePlan>& cases, std::size_t i,
                  const RunOptions& options, RunResult& result) {
    if (!options.diagnose) {
        return;
    }
    const std::optional<std::string> counters_not_enough = diagnose_from_counters(cases, i, options, result);
    if (!counters_not_enough || options.nsight_compute.empty()) {
        return;
    }
    if (options.trace != nullptr) {
        options.trace->record({{"event", "profile"},
                               {"submission", options.trace_label},
                               {"case", cases[i].id},
                               {"status", to_string(result.cases[i].status)},
                               {"why", *counters_not_enough}});
    }
    // Nsight Compute runs one profile of a machine at a time, whole processes of its own included, and a second
    // ncu waits for the first: profiles take turns here, outside any time limit, and a profile that would wait
    // longer than profile_wait_seconds (a batch whose other workers profile too) is left out rather than hold its
    // worker idle.
    const auto asked = Clock::now();
    const MachineLock profiler(profiler_lock_file(), Seconds(options.profile_wait_seconds));
    const double lock_wait = Seconds(Clock::now() - asked).count();
    result.seconds.gpu_wait += lock_wait;
    if (!profiler.held()) {
        result.diagnosis_notes.push_back(turn_not_come(options));
        return;
    }
    const auto started = Clock::now();
    // The profiler replays each kernel several times, saving and restoring the memory it writes: longer than one
    // call. Waiting for the GPU alone around the profiled call is not counted.
    std::vector<CasePlan> reruns = cases;
    reruns[i].case_seconds = std::min(reruns[i].case_seconds, options.diagnosis_seconds);
    RunOptions rerun_options = options;
    rerun_options.sanitizer_startup_seconds = options.diagnosis_seconds;
    CaseRunner runner(program, reruns, rerun_options);
    const fs::path report = options.work_dir / "profile.csv";
    const auto profile_once = [&] {
        fs::remove(report);
        auto ended = runner.run({i}, profiler_command(options.nsight_compute, report),
                                {.profile = true, .tool = "Nsight Compute"});
        std::string written;
        if (std::ifstream file(report); file) {
            written.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
        }
        return std::pair{std::move(ended), std::move(written)};
    };
    auto [processes, csv] = profile_once();
    // Nsight Compute sometimes fails while other processes use the GPU, exit code 9 ("==ERROR== Failed to prepare
    // kernel for profiling", "==ERROR== An error was reported by the driver", both seen on an H200 in a batch): once
    // more, while the budget lasts.
    const auto said = [&](const char* words) {
        return csv.find(words) != std::string::npos ||
               (!processes.empty() && processes.back().output.find(words) != std::string::npos);
    };
    const bool transient_failure = said("Failed to prepare kernel") || said("An error was reported by the driver");
    if (transient_failure && Seconds(Clock::now() - started).count() < options.diagnosis_seconds / 2) {
        runner.reopen({i});
        std::tie(processes, csv) = profile_once();
    }
    const double waited = runner.result().seconds.gpu_wait;  // for the GPU alone around the profiled call
    result.seconds.gpu_wait += waited;
    // Why there is no profile, in the profiler's words: its first error ("==ERROR== ERR_NVGPUCTRPERM ..."), else its
    // first warning ("==WARNING== No kernels were profiled"), else the last thing it said, unless it ran out of time
    // (then what it said last is whatever it was doing, not why).
    const auto no_profile = [&](const std::string& why) {
        const std::string output = csv + (processes.empty() ? std::string() : processes.back().output);
        std::string said;
        const auto line_at = [&](std::size_t at) { return output.substr(at, output.find('\n', at) - at); };
        const auto error = output.find("==ERROR==");
        // Its note that the clocks were left alone comes with every profile: the warning wanted is another.
        auto warning = output.find("==WARNING==");
        while (warning != std::string::npos && line_at(warning).find("unmodified GPU clocks") != std::string::npos) {
            warning = output.find("==WARNING==", warning + 1);
        }
        if (const auto at = error != std::string::npos ? error : warning; at != std::string::npos) {
            said = line_at(at);
        } else if (processes.empty() || !processes.back().status.timed_out) {
            std::istringstream lines(output);
            for (std::string line; std::getline(lines, line);) {
                if (line.find_first_not_of(" \t\r") != std::string::npos) {
                    said = line;
                }
            }
        }
        result.diagnosis_notes.push_back(fmt::format("the speed test could not be profiled: {}{}", why,
                                                     said.empty() ? "" : ": " + said.substr(0, 300)));
    };
    try {
        const auto launches = read_profile(csv);
        if (auto found = speed_diagnosis(launches, speed_test_figures(cases[i], result.cases[i]))) {
            found->scope = "found on " + cases[i].id;
            found->tool_output = csv.substr(0, 64 * 1024);
            result.cases[i].diagnosis = std::move(*found);
        } else if (launches.empty()) {
            no_profile("Nsight Compute saw no kernel of the submission's");
        } else {
            // Its report has the kernels, but no figures to read (a metric it could not collect reads "nan").
            result.diagnosis_notes.push_back(
                "the speed test could not be profiled: Nsight Compute measured no time in the submission's kernels");
        }
    } catch (const std::runtime_error& e) {
        no_profile(processes.empty()                     ? e.what()
                   : processes.back().status.timed_out ? fmt::format("Nsight Compute stopped after {} s",
                                                                      options.diagnosis_seconds)
                                                         : "Nsight Compute " + processes.back().status.describe());
    }
    result.seconds.diagnosis += Seconds(Clock::now() - started).count() - waited;
}

RunResult run_cases_on_cpu(const fs::path& program, const std::vector<CasePlan>& cases, const RunOptions& options,
                           const std::vector<std::string>& schedules) {
    std::vector<std::size_t> all(cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        all[i] = i;
    }
    const auto run_under = [&](const std::string& schedule, const std::vector<std::size_t>& indices) {
        RunOptions under = options;
        under.environment.emplace_back("CUGRADE_CPU_SCHEDULE", schedule);
        CaseRunner runner(program, cases, under);
        runner.run(indices, {});
        explain_cpu_faults(program, options.student_files, runner.result());
        return std::move(runner.result());
    };
    RunResult first = run_under(schedules.front(), all);
    // A case that crashed, hung or failed to launch says so under every order; those that gave a result run again.
    std::vector<std::size_t> answered;
    for (const std::size_t i : all) {
        if (first.cases[i].status == Status::passed || first.cases[i].status == Status::wrong_answer) {
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
        (cases[i].race_check ? race_checked : cases[i].visibility == Visibility::hidden ? hidden : visible).push_back(i);
    }
    // One process for both (restarts aside): a harness's start is mostly CUDA's context, which the driver makes
    // one at a time for the whole machine.
    std::vector<std::size_t> graded = visible;
    graded.insert(graded.end(), hidden.begin(), hidden.end());
    runner.run(graded, {});
    if (!race_checked.empty() && options.compute_sanitizer.empty()) {
        for (const std::size_t i : race_checked) {
            runner.settle(i, {Status::harness_error, "compute-sanitizer was not found, so the race check could not run"});
        }
    } else if (!race_checked.empty()) {
        check_races(runner, cases, race_checked, options);
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
