// A batch's checkers kept across submissions (checker_pool.hpp), as the run loop uses them: a checker started under a
// tool for the jobs of one exercise, and one job of it, whose only answer is whether the tool had anything to say.
#include "run/case_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
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

bool CaseRunner::kept_checker_serves(const std::vector<std::size_t>& cases, const std::vector<std::string>& launcher) const {
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
    // What a checker is started with, beyond its jobs: the program, the tool, and the buffers' layout.
    std::string key = options_.shared_program.string() + (mode.bare_buffers ? "\nbare buffers" : "");
    for (const std::string& word : launcher) {
        key += "\n" + word;
    }
    const auto job_started = Clock::now();
    std::unique_ptr<KeptChecker> checker = pool.take(key);
    // A checker started now takes its job once it is ready: until then it reads the GPU's grants on its channel.
    bool job_sent = false;
    // The job: the submission's runner, started now, and the device code, both handed over with the cases.
    std::unique_ptr<ChildProcess> runner;
    int runner_end = -1;
    int device_code = -1;
    nlohmann::json job = {{"cases", nlohmann::json::array()}};
    for (const std::size_t i : left) {
        job["cases"].push_back(static_cast<const plan::Case&>(cases_[i]));
    }
    const auto send_job = [&] {
        const bool sent = checker->child->reply_with_descriptors(job.dump() + "\n", {device_code, runner_end});
        ::close(device_code);
        ::close(runner_end);
        device_code = runner_end = -1;
        job_sent = true;
        return sent;
    };
    try {
        const bool ready = checker != nullptr;
        if (!checker) {
            checker = start_kept_checker(key, launcher, mode);
        }
        std::tie(runner, runner_end) = start_runner();
        device_code = ::open(options_.device_code.c_str(), O_RDONLY | O_CLOEXEC);
        if (device_code < 0) {
            throw std::runtime_error(fmt::format("cannot open {}: {}", options_.device_code.string(), std::strerror(errno)));
        }
        if (ready && !send_job()) {
            throw std::runtime_error("the kept checker did not take the job");
        }
    } catch (const std::exception&) {
        for (const int fd : {runner_end, device_code}) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
        if (runner) {
            runner->kill_group();
            runner->finish(after(5.0));
        }
        pool.end(std::move(checker));
        return {};  // the cases run in a fresh process, which says what stops them
    }
    ++run_.processes;
    ChildProcess& child = *checker->child;
    GpuGate::Hold gpu(options_.gpu_gate);
    constexpr std::size_t none = static_cast<std::size_t>(-1);
    std::size_t current = none;
    auto case_started = Clock::now();
    double in_cases = 0.0;
    double waited = 0.0;
    std::optional<double> ready_after;
    const double startup_seconds = options_.sanitizer_startup_seconds;
    auto deadline = after(startup_seconds);
    bool job_done = false;
    bool checker_ended = false;
    bool past_limit = false;  // a case ran past its limit, or the checker was not ready in time
    std::optional<std::size_t> last_reported;  // the last case whose result came, while no case runs after it
    std::string why_not_done;  // for the trace
    std::string line;
    while (true) {
        const auto next = child.next_line(line, std::min(deadline, after(0.01)));
        runner->drain();
        if (next == ChildProcess::Next::deadline && Clock::now() < deadline) {
            continue;
        }
        if (next != ChildProcess::Next::line) {
            // The checker ended, or a case ran past its limit: a fresh process says what became of it.
            checker_ended = next == ChildProcess::Next::closed;
            past_limit = !checker_ended;
            why_not_done = checker_ended ? "the checker ended" : "past the limit";
            break;
        }
        const auto record = nlohmann::json::parse(line, nullptr, false);
        if (!record.is_object() || !record.contains("event")) {
            continue;
        }
        if (!record.contains("token") || !record["token"].is_string() ||
            record["token"].get<std::string>() != checker->token) {
            ++run_.forged_records;
            continue;
        }
        const std::string event = record.value("event", "");
        const std::string id = record.value("case", "");
        if (event == "ready" && !job_sent) {
            add_protections(checker->protections, protections_of(record));
            if (!send_job()) {
                why_not_done = "the kept checker did not take the job";
                break;
            }
        } else if (event == "ready") {
            ready_after = Seconds(Clock::now() - job_started).count();
            add_protections(checker->protections, protections_of(record));
        } else if (event == "start" && index_of_.count(id) != 0) {
            current = index_of_[id];
            last_reported.reset();
            gpu.set_label(options_.trace_label + " " + id + " " + launcher.front());
            deadline = after(cases_[current].case_seconds);
            case_started = Clock::now();
        } else if (event == "gpu") {
            const GpuGate::Use wanted = requested_use(record);
            const auto asked = Clock::now();
            gpu.change(wanted);
            const auto waited_for = Clock::now() - asked;
            waited += Seconds(waited_for).count();
            run_.seconds.gpu_wait += Seconds(waited_for).count();
            deadline += waited_for;
            case_started += current != none ? waited_for : Clock::duration::zero();
            if (wanted != GpuGate::Use::none) {
                child.reply(std::string(1, protocol::gpu_granted));
            }
        } else if (event == "result" && current != none && id == cases_[current].id) {
            // Its verdict is not taken: another submission's kernels ran in this process before.
            gpu.change(GpuGate::Use::none);
            const double took = Seconds(Clock::now() - case_started).count();
            in_cases += took;
            stage_of(cases_[current]) += took;
            last_reported = current;
            current = none;
            deadline = after(startup_seconds);
        } else if (event == "job_done" && current == none) {
            job_done = true;
            break;
        } else if (event == "fatal") {
            why_not_done = record.value("detail", "");
            break;
        }
    }
    for (const int fd : {runner_end, device_code}) {
        if (fd >= 0) {
            ::close(fd);  // never sent: the checker ended before it was ready
        }
    }
    gpu.change(GpuGate::Use::none);
    // All the job printed, a tool's reports among it, is out before the marker of its end.
    const std::string end_line = checker->marker + " " + protocol::job_end_marker;
    const auto read_until = after(5.0);
    while (job_done && child.output().find(end_line) == std::string::npos && Clock::now() < read_until) {
        if (child.next_line(line, after(0.01)) == ChildProcess::Next::closed) {
            child.drain();
            break;
        }
    }
    // A checker that ended itself after a case's result, to have the cases after it run in a fresh process (a
    // fault, or a write past an output: exit_restart), printed all of that case before it ended: the tool's
    // reports, and its summary. A case it did not report is not whole.
    std::optional<std::size_t> whole_before_end;
    if (checker_ended && last_reported) {
        const ExitStatus status = child.finish(after(5.0));
        if (status.exited() && !status.timed_out && status.code == protocol::exit_restart) {
            whole_before_end = last_reported;
        }
    }
    bool truncated = false;
    const std::string printed = child.take_output(truncated);
    const bool all_read = job_done && printed.find(end_line) != std::string::npos && !truncated;
    // The runner ends once the checker has closed its channel; one that does not is killed.
    if (!job_done) {
        runner->kill_group();
    }
    runner->finish(after(5.0));
    const bool nothing_reported = all_read && !sanitizer_said_anything(printed);
    const double seconds = Seconds(Clock::now() - job_started).count();
    run_.seconds.race_check += std::max(0.0, seconds - in_cases - waited);
    if (options_.trace != nullptr) {
        const std::size_t tail = std::min<std::size_t>(printed.size(), 600);
        options_.trace->record({{"submission", options_.trace_label},
                                {"tool", mode.tool},
                                {"cases", left.size()},
                                {"first_case", cases_[left.front()].id},
                                {"seconds", seconds},
                                {"in_cases", in_cases},
                                {"waited_for_gpu", waited},
                                {"ready_after", ready_after.value_or(-1.0)},
                                {"waited_before_ready", 0.0},
                                {"cpu", 0.0},
                                {"runner_cpu", runner->cpu_seconds_used()},
                                {"kept_job", checker->jobs + 1},
                                {"bare_buffers", mode.bare_buffers},
                                {"detail", nothing_reported || job_done ? std::string() : why_not_done},
                                {"printed", job_done ? std::string() : printed.substr(printed.size() - tail)},
                                {"ended", nothing_reported ? std::string("a job served, nothing reported")
                                          : job_done       ? std::string("a job served, a report: its checker ended")
                                                           : std::string("a job not finished: its checker ended")}});
    }
    // What the cases printed here is filed by the process that grades them.
    KeptJob shown;
    shown.nothing_reported = nothing_reported;
    shown.past_limit = past_limit;
    if (!truncated) {
        MarkedOutput split = split_at_markers(printed, checker->marker);
        for (std::size_t position = 0; position < split.order.size(); ++position) {
            const auto found = index_of_.find(split.order[position]);
            const bool whole = position + 1 < split.order.size() ||
                               (found != index_of_.end() && whole_before_end == found->second);
            if (found != index_of_.end() && whole) {
                shown.finished_parts.emplace_back(found->second, std::move(split.by_case[split.order[position]]));
            }
        }
    }
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
