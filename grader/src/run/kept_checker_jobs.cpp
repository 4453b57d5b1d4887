// A batch's checkers kept across submissions (checker_pool.hpp), as the run loop uses them: a checker started under a
// tool for the jobs of one exercise, and one job of it, whose only answer is whether the tool had anything to say.
#include "run/case_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

#include <fcntl.h>
#include <unistd.h>

#include "run/case_markers.hpp"
#include "diagnose/sanitizer_report.hpp"
#include "run/harness_records.hpp"
#include "protocol.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t no_case = static_cast<std::size_t>(-1);

// What a checker is started with, beyond its jobs: the program, the tool, and the buffers' layout.
std::string kept_checker_key(const fs::path& program, RunMode mode, const std::vector<std::string>& launcher) {
    std::string key = program.string() + (mode.bare_buffers ? "\nbare buffers" : "");
    for (const std::string& word : launcher) {
        key += "\n" + word;
    }
    return key;
}

// The job: the submission's runner, started now, and the device code, both handed over with the cases.
struct JobHandover {
    nlohmann::json job;
    int runner_end = -1;
    int device_code = -1;
    bool sent = false;

    bool send(ChildProcess& checker) {
        const bool taken = checker.reply_with_descriptors(job.dump() + "\n", {device_code, runner_end});
        ::close(device_code);
        ::close(runner_end);
        device_code = runner_end = -1;
        sent = true;
        return taken;
    }
    void close_unsent() {
        for (const int fd : {runner_end, device_code}) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
    }
};

JobHandover job_of(const std::vector<CasePlan>& cases, const std::vector<std::size_t>& left) {
    JobHandover handover;
    handover.job = {{"cases", nlohmann::json::array()}};
    for (const std::size_t i : left) {
        handover.job["cases"].push_back(static_cast<const plan::Case&>(cases[i]));
    }
    return handover;
}

int open_device_code(const fs::path& device_code) {
    const int fd = ::open(device_code.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        throw std::runtime_error(fmt::format("cannot open {}: {}", device_code.string(), std::strerror(errno)));
    }
    return fd;
}

// A job that could not be handed over: what was started for it ends.
void abandon_job(JobHandover& handover, ChildProcess* runner, const CheckerPool& pool,
                 std::unique_ptr<KeptChecker> checker) {
    handover.close_unsent();
    if (runner != nullptr) {
        runner->kill_group();
        runner->finish(after(5.0));
    }
    pool.end(std::move(checker));
}

// What a kept job's run loop reads and answers: the runner's cases and costs, and the checker serving the job.
struct JobScene {
    const std::vector<CasePlan>& cases;
    const std::map<std::string, std::size_t>& index_of;
    RunResult& run;
    std::function<double&(const CasePlan&)> stage_of;
    const RunOptions& options;
    const std::string& tool;  // the launcher's program, for the GPU's label
    KeptChecker& checker;
    JobHandover& handover;
    GpuGate::Hold& gpu;
    Clock::time_point job_started;
    double startup_seconds;
};

// A kept job as its checker runs it: the case running and its deadline, and what became of the job.
struct JobState {
    std::size_t current = no_case;
    Clock::time_point case_started;
    Clock::time_point deadline;
    double in_cases = 0.0;
    double waited = 0.0;
    std::optional<double> ready_after;
    bool job_done = false;
    bool checker_ended = false;
    bool past_limit = false;                   // a case ran past its limit, or the checker was not ready in time
    std::optional<std::size_t> last_reported;  // the last case whose result came, while no case runs after it
    std::string why_not_done;                  // for the trace
};

void answer_gpu_request(const JobScene& scene, const nlohmann::json& record, JobState& state) {
    const GpuGate::Use wanted = requested_use(record);
    const auto asked = Clock::now();
    scene.gpu.change(wanted);
    const auto waited_for = Clock::now() - asked;
    state.waited += Seconds(waited_for).count();
    scene.run.seconds.gpu_wait += Seconds(waited_for).count();
    state.deadline += waited_for;
    state.case_started += state.current != no_case ? waited_for : Clock::duration::zero();
    if (wanted != GpuGate::Use::none) {
        scene.checker.child->reply(std::string(1, protocol::gpu_granted));
    }
}

void start_case(const JobScene& scene, const std::string& id, JobState& state) {
    state.current = scene.index_of.at(id);
    state.last_reported.reset();
    scene.gpu.set_label(scene.options.trace_label + " " + id + " " + scene.tool);
    state.deadline = after(scene.cases[state.current].case_seconds);
    state.case_started = Clock::now();
}

void end_case(const JobScene& scene, JobState& state) {
    // Its verdict is not taken: another submission's kernels ran in this process before.
    scene.gpu.change(GpuGate::Use::none);
    const double took = Seconds(Clock::now() - state.case_started).count();
    state.in_cases += took;
    scene.stage_of(scene.cases[state.current]) += took;
    state.last_reported = state.current;
    state.current = no_case;
    state.deadline = after(scene.startup_seconds);
}

// Takes one of the checker's records; false once the job is over, done or not.
bool take_record(const JobScene& scene, const nlohmann::json& record, JobState& state) {
    const std::string event = record.value("event", "");
    const std::string id = record.value("case", "");
    if (event == "ready" && !scene.handover.sent) {
        add_protections(scene.checker.protections, protections_of(record));
        if (!scene.handover.send(*scene.checker.child)) {
            state.why_not_done = "the kept checker did not take the job";
            return false;
        }
    } else if (event == "ready") {
        state.ready_after = Seconds(Clock::now() - scene.job_started).count();
        add_protections(scene.checker.protections, protections_of(record));
    } else if (event == "start" && scene.index_of.count(id) != 0) {
        start_case(scene, id, state);
    } else if (event == "gpu") {
        answer_gpu_request(scene, record, state);
    } else if (event == "result" && state.current != no_case && id == scene.cases[state.current].id) {
        end_case(scene, state);
    } else if (event == "job_done" && state.current == no_case) {
        state.job_done = true;
        return false;
    } else if (event == "fatal") {
        state.why_not_done = record.value("detail", "");
        return false;
    }
    return true;
}

// Follows the job until it is done, the checker ends, or a case runs past its limit.
JobState watch_job(const JobScene& scene, ChildProcess& runner) {
    JobState state;
    state.case_started = Clock::now();
    state.deadline = after(scene.startup_seconds);
    ChildProcess& child = *scene.checker.child;
    std::string line;
    while (true) {
        const auto next = child.next_line(line, std::min(state.deadline, after(0.01)));
        runner.drain();
        if (next == ChildProcess::Next::deadline && Clock::now() < state.deadline) {
            continue;
        }
        if (next != ChildProcess::Next::line) {
            // The checker ended, or a case ran past its limit: a fresh process says what became of it.
            state.checker_ended = next == ChildProcess::Next::closed;
            state.past_limit = !state.checker_ended;
            state.why_not_done = state.checker_ended ? "the checker ended" : "past the limit";
            return state;
        }
        const auto record = nlohmann::json::parse(line, nullptr, false);
        if (!record.is_object() || !record.contains("event")) {
            continue;
        }
        if (!record.contains("token") || !record["token"].is_string() ||
            record["token"].get<std::string>() != scene.checker.token) {
            ++scene.run.forged_records;
            continue;
        }
        if (!take_record(scene, record, state)) {
            return state;
        }
    }
}

// What the job printed, as the checker left it.
struct JobPrinted {
    std::string text;
    bool truncated = false;
    bool all_read = false;  // up to the job's end marker, nothing cut
    // The case the checker reported last before it ended itself, whole.
    std::optional<std::size_t> whole_before_end;
};

JobPrinted take_printed(ChildProcess& child, const std::string& marker, const JobState& state) {
    // All the job printed, a tool's reports among it, is out before the marker of its end.
    const std::string end_line = marker + " " + protocol::job_end_marker;
    const auto read_until = after(5.0);
    std::string line;
    while (state.job_done && child.output().find(end_line) == std::string::npos && Clock::now() < read_until) {
        if (child.next_line(line, after(0.01)) == ChildProcess::Next::closed) {
            child.drain();
            break;
        }
    }
    JobPrinted printed;
    // A checker that ended itself after a case's result, to have the cases after it run in a fresh process (a
    // fault, or a write past an output: exit_restart), printed all of that case before it ended: the tool's
    // reports, and its summary. A case it did not report is not whole.
    if (state.checker_ended && state.last_reported) {
        const ExitStatus status = child.finish(after(5.0));
        if (status.exited() && !status.timed_out && status.code == protocol::exit_restart) {
            printed.whole_before_end = state.last_reported;
        }
    }
    printed.text = child.take_output(printed.truncated);
    printed.all_read = state.job_done && printed.text.find(end_line) != std::string::npos && !printed.truncated;
    return printed;
}

// What a kept job cost and how it ended, for the trace.
struct JobRecord {
    const RunMode& mode;
    const std::vector<std::size_t>& left;
    double seconds;
    const JobState& state;
    const ChildProcess& runner;
    int kept_job;
    bool nothing_reported;
    const std::string& printed;
};

void trace_job(const RunOptions& options, const std::vector<CasePlan>& cases, const JobRecord& job) {
    const std::size_t tail = std::min<std::size_t>(job.printed.size(), 600);
    const bool job_done = job.state.job_done;
    options.trace->record({{"submission", options.trace_label},
                           {"tool", job.mode.tool},
                           {"cases", job.left.size()},
                           {"first_case", cases[job.left.front()].id},
                           {"seconds", job.seconds},
                           {"in_cases", job.state.in_cases},
                           {"waited_for_gpu", job.state.waited},
                           {"ready_after", job.state.ready_after.value_or(-1.0)},
                           {"waited_before_ready", 0.0},
                           {"cpu", 0.0},
                           {"runner_cpu", job.runner.cpu_seconds_used()},
                           {"kept_job", job.kept_job},
                           {"bare_buffers", job.mode.bare_buffers},
                           {"detail", job.nothing_reported || job_done ? std::string() : job.state.why_not_done},
                           {"printed", job_done ? std::string() : job.printed.substr(job.printed.size() - tail)},
                           {"ended", job.nothing_reported ? std::string("a job served, nothing reported")
                                     : job_done           ? std::string("a job served, a report: its checker ended")
                                                          : std::string("a job not finished: its checker ended")}});
}

// The cases whose part of what the job printed is whole, with their parts (CaseRunner::KeptJob::finished_parts).
std::vector<std::pair<std::size_t, std::string>> finished_parts(JobPrinted& printed, const std::string& marker,
                                                                const std::map<std::string, std::size_t>& index_of) {
    std::vector<std::pair<std::size_t, std::string>> parts;
    if (printed.truncated) {
        return parts;
    }
    MarkedOutput split = split_at_markers(printed.text, marker);
    for (std::size_t position = 0; position < split.order.size(); ++position) {
        const auto found = index_of.find(split.order[position]);
        const bool whole =
            position + 1 < split.order.size() || (found != index_of.end() && printed.whole_before_end == found->second);
        if (found != index_of.end() && whole) {
            parts.emplace_back(found->second, std::move(split.by_case[split.order[position]]));
        }
    }
    return parts;
}

}  // namespace

bool CaseRunner::kept_checker_serves(const std::vector<std::size_t>& cases,
                                     const std::vector<std::string>& launcher) const {
    if (options_.checker_pool == nullptr || options_.shared_program.empty() || options_.runner.empty() ||
        options_.device_code.empty() || launcher.empty() || cases.empty()) {
        return false;
    }
    return std::all_of(cases.begin(), cases.end(), [&](std::size_t i) {
        return !done_[i] && cases_[i].visibility == cases_[cases.front()].visibility;
    });
}

std::unique_ptr<KeptChecker> CaseRunner::start_kept_checker(const std::string& key,
                                                            const std::vector<std::string>& launcher, RunMode mode) {
    CheckerPool& pool = *options_.checker_pool;
    auto checker = std::make_unique<KeptChecker>();
    checker->key = key;
    checker->token = make_token();
    checker->marker = "cugrade-case-" + make_token();
    checker->gate = options_.gpu_gate;
    nlohmann::json plan = make_plan({}, /*skip_exit_handlers=*/false, "");
    plan["jobs"] = true;
    plan["case_marker"] = checker->marker;
    plan["gpu_gate"] = gpu_requests_answered(mode);
    plan["bare_buffers"] = mode.bare_buffers;
    plan["separate_allocations"] = mode.separate_allocations();
    if (mode.counters_round) {
        plan["counters_round"] = true;
        plan["counter_profiler"] = options_.cupti_library.string();
    }
    const fs::path plan_file = pool.folder() / fmt::format("plan-{}.json", checker->token);
    std::ofstream(plan_file) << plan.dump(2);
    ProcessOptions process;
    process.argv = launcher;
    process.argv.push_back(pool.program_copy(options_.shared_program).string());
    process.argv.push_back(plan_file.string());
    process.working_directory = pool.folder();
    process.result_channel = true;
    process.environment = checker_environment(options_);
    process.environment.emplace_back(protocol::token_env, checker->token);
    process.sandbox = options_.sandbox;
    process.sandbox.work_dir = pool.folder();
    if (mode.counters_round) {
        process.sandbox.readable.push_back(options_.cupti_library.parent_path());  // CUPTI loads its neighbours
    }
    process.output_limit = options_.output_limit;
    checker->child = std::make_unique<ChildProcess>(process);
    return checker;
}

CaseRunner::KeptJob CaseRunner::run_in_kept_checker(const std::vector<std::size_t>& left,
                                                    const std::vector<std::string>& launcher, RunMode mode) {
    if (!kept_checker_serves(left, launcher)) {
        return {};
    }
    mode.case_markers = true;
    CheckerPool& pool = *options_.checker_pool;
    const std::string key = kept_checker_key(options_.shared_program, mode, launcher);
    const auto job_started = Clock::now();
    std::unique_ptr<KeptChecker> checker = pool.take(key);
    // A checker started now takes its job once it is ready: until then it reads the GPU's grants on its channel.
    JobHandover handover = job_of(cases_, left);
    std::unique_ptr<ChildProcess> runner;
    try {
        const bool ready = checker != nullptr;
        if (!checker) {
            checker = start_kept_checker(key, launcher, mode);
        }
        std::tie(runner, handover.runner_end) = start_runner();
        handover.device_code = open_device_code(options_.device_code);
        if (ready && !handover.send(*checker->child)) {
            throw std::runtime_error("the kept checker did not take the job");
        }
    } catch (const std::exception&) {
        abandon_job(handover, runner.get(), pool, std::move(checker));
        return {};  // the cases run in a fresh process, which says what stops them
    }
    ++run_.processes;
    GpuGate::Hold gpu(options_.gpu_gate);
    const JobScene scene{cases_,
                         index_of_,
                         run_,
                         [this](const CasePlan& c) -> double& { return stage_of(c); },
                         options_,
                         launcher.front(),
                         *checker,
                         handover,
                         gpu,
                         job_started,
                         options_.sanitizer_startup_seconds};
    const JobState state = watch_job(scene, *runner);
    handover.close_unsent();  // never sent: the checker ended before it was ready
    gpu.change(GpuGate::Use::none);
    JobPrinted printed = take_printed(*checker->child, checker->marker, state);
    // The runner ends once the checker has closed its channel; one that does not is killed.
    if (!state.job_done) {
        runner->kill_group();
    }
    runner->finish(after(5.0));
    const bool nothing_reported = printed.all_read && !sanitizer_said_anything(printed.text);
    const double seconds = Seconds(Clock::now() - job_started).count();
    run_.seconds.race_check += std::max(0.0, seconds - state.in_cases - state.waited);
    if (options_.trace != nullptr) {
        trace_job(options_, cases_,
                  {mode, left, seconds, state, *runner, checker->jobs + 1, nothing_reported, printed.text});
    }
    // What the cases printed here is filed by the process that grades them.
    KeptJob shown{.nothing_reported = nothing_reported,
                  .finished_parts = finished_parts(printed, checker->marker, index_of_),
                  .past_limit = state.past_limit};
    if (!nothing_reported) {
        pool.end(std::move(checker));
        return shown;
    }
    add_protections(run_.protections, checker->protections);
    ++checker->jobs;
    pool.give_back(std::move(checker));
    return shown;
}

}  // namespace cugrade
