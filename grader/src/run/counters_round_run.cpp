// A batch's rounds of profiles as the run loop serves them (counters_rounds.hpp): a checker kept for the round, and
// each waiting speed test profiled in it as a job, with the GPU alone and the machine's counters held throughout.
#include "run/case_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include <fcntl.h>
#include <unistd.h>

#include "run/harness_records.hpp"
#include "base/machine_lock.hpp"
#include "protocol.hpp"

namespace cugrade {

bool CaseRunner::counters_in_rounds() const {
    return !options_.shared_program.empty() && !options_.runner.empty() && !options_.device_code.empty() &&
           !options_.cupti_library.empty() && options_.diagnose;
}

namespace {

// The next genuine record of a round's checker (its token's), or why there is none by `deadline`; a runner beside
// it is drained meanwhile.
std::optional<nlohmann::json> next_round_record(KeptChecker& checker, ChildProcess* runner, Clock::time_point deadline,
                                                std::string& why) {
    std::string line;
    while (true) {
        const auto next = checker.child->next_line(line, std::min(deadline, after(0.01)));
        if (runner != nullptr) {
            runner->drain();
        }
        if (next == ChildProcess::Next::deadline && Clock::now() < deadline) {
            continue;
        }
        if (next != ChildProcess::Next::line) {
            why = next == ChildProcess::Next::closed ? "the profiling checker ended"
                                                     : "the profiling checker stopped at its limit";
            return std::nullopt;
        }
        auto record = nlohmann::json::parse(line, nullptr, false);
        if (record.is_object() && record.contains("event") && record.value("token", "") == checker.token) {
            return record;
        }
    }
}

// Answers a round's checker's request for the GPU or the counters: at once while the round holds the GPU alone (and
// the machine's counters), else as the gate gives it.
bool answered_in_round(KeptChecker& checker, const nlohmann::json& record, GpuGate::Hold& gpu) {
    const std::string event = record.value("event", "");
    if (event == "gpu") {
        const GpuGate::Use wanted = requested_use(record);
        if (gpu.held() != GpuGate::Use::exclusive) {
            gpu.change(wanted);
        }
        if (wanted != GpuGate::Use::none) {
            checker.child->reply(std::string(1, protocol::gpu_granted));
        }
        return true;
    }
    if (event == "counters") {
        const std::string use = record.value("use", "");
        if (use == "try" || use == "take") {
            checker.child->reply(std::string(1, protocol::counters_granted));
        }
        return true;
    }
    return false;
}

}  // namespace

std::unique_ptr<KeptChecker> CaseRunner::start_round_checker(GpuGate::Hold& gpu, std::string& why) {
    RunMode mode;
    mode.counters_round = true;
    std::unique_ptr<KeptChecker> checker;
    try {
        checker = start_kept_checker(options_.shared_program.string() + "\ncounters round", {}, mode);
    } catch (const std::exception& e) {
        why = e.what();
        return nullptr;
    }
    const auto deadline = after(options_.startup_seconds);
    while (auto record = next_round_record(*checker, nullptr, deadline, why)) {
        if (answered_in_round(*checker, *record, gpu)) {
            continue;
        }
        const std::string event = record->value("event", "");
        if (event == "ready") {
            return checker;
        }
        if (event == "fatal") {
            why = record->value("detail", "");
            break;
        }
    }
    checker->child->kill_group();
    checker->child->finish(after(5.0));
    return nullptr;
}

nlohmann::json CaseRunner::counters_job(KeptChecker& checker, std::size_t i, double call_ms, GpuGate::Hold& gpu,
                                        bool& usable) {
    usable = false;
    const auto problem = [](const std::string& why) { return nlohmann::json{{"problem", why}}; };
    std::unique_ptr<ChildProcess> runner;
    int runner_end = -1;
    try {
        std::tie(runner, runner_end) = start_runner();
    } catch (const std::exception& e) {
        return problem(e.what());
    }
    const int device_code = ::open(options_.device_code.c_str(), O_RDONLY | O_CLOEXEC);
    const nlohmann::json job = {{"cases", {static_cast<const plan::Case&>(cases_[i])}}, {"call_ms", call_ms}};
    const bool sent =
        device_code >= 0 && checker.child->reply_with_descriptors(job.dump() + "\n", {device_code, runner_end});
    ::close(runner_end);
    if (device_code >= 0) {
        ::close(device_code);
    }
    nlohmann::json profile;
    std::string why = device_code < 0
                          ? fmt::format("cannot open {}: {}", options_.device_code.string(), std::strerror(errno))
                          : "the profiling checker did not take the job";
    bool job_done = false;
    auto deadline = after(options_.startup_seconds);
    while (sent) {
        const auto record = next_round_record(checker, runner.get(), deadline, why);
        if (!record) {
            break;
        }
        if (answered_in_round(checker, *record, gpu)) {
            continue;
        }
        const std::string event = record->value("event", "");
        if (event == "start") {
            deadline = after(std::min(cases_[i].case_seconds, options_.diagnosis_seconds));
        } else if (event == "result") {
            const std::string status = record->value("status", "");
            const auto measurements = record->value("measurements", nlohmann::json::object());
            if (status == protocol::status_passed && measurements.contains("kernel_profile")) {
                profile = measurements["kernel_profile"];
            } else {
                why = fmt::format("its call, made again to be profiled, ended as {}: {}", status,
                                  record->value("detail", "").substr(0, 300));
            }
            deadline = after(options_.startup_seconds);
        } else if (event == "job_done") {
            job_done = true;
            break;
        } else if (event == "fatal") {
            why = record->value("detail", "");
            break;
        }
    }
    if (!job_done) {
        runner->kill_group();
    }
    runner->finish(after(5.0));
    bool truncated = false;
    checker.child->take_output(truncated);  // what the submission printed while profiled is not its grading's
    usable = job_done;
    return profile.is_null() ? problem(why) : profile;
}

namespace {

// The requests of the first one's checker, taken out of `left`, in the order they came.
std::vector<CountersRequest*> take_first_checkers_requests(std::vector<CountersRequest*>& left) {
    const std::string program = left.front()->checker;
    std::vector<CountersRequest*> mine;
    std::erase_if(left, [&](CountersRequest* r) {
        if (r->checker != program) {
            return false;
        }
        mine.push_back(r);
        return true;
    });
    return mine;
}

void end_round_checker(std::unique_ptr<KeptChecker>& checker) {
    // A job that did not end as it should: whatever it left in the context goes with the process now.
    checker->child->kill_group();
    checker->child->finish(after(5.0));
    checker.reset();
}

}  // namespace

// A round of one checker's requests: the checker serving them (started again after a job that ended it), and what
// the trace tells of the round.
struct CaseRunner::CountersRound {
    std::unique_ptr<KeptChecker> checker;
    std::optional<Clock::time_point> alone_since;
    double waited_for_alone = 0.0;
    int checkers_started = 0;
    int failed = 0;
};

void CaseRunner::run_counters_round(const std::vector<CountersRequest*>& requests) {
    // A round serves one checker's requests (counters_rounds.hpp); one checker's requests at a time, in the order
    // they came, where given several.
    std::vector<CountersRequest*> left = requests;
    while (!left.empty()) {
        run_one_checkers_round(take_first_checkers_requests(left));
    }
}

void CaseRunner::run_one_checkers_round(const std::vector<CountersRequest*>& mine) {
    const std::string program = mine.front()->checker;
    const RunOptions& options = mine.front()->runner->options_;
    const auto started = Clock::now();
    // The machine's turn at the counters, then the GPU alone, held for all of the checker's jobs.
    std::optional<MachineLock> counters;
    try {
        counters.emplace(profiler_lock_file(), Seconds(options.profile_wait_seconds));
    } catch (const std::runtime_error&) {
        // No turn to be had (the lock's file is unusable).
    }
    if (!counters || !counters->held()) {
        for (CountersRequest* r : mine) {
            r->profile = {{"problem", "other profiles held the GPU's counters (they take turns on a machine)"},
                          {"turn_refused", true}};
        }
        return;
    }
    GpuGate::Hold gpu(options.gpu_gate);
    gpu.set_label("a round of profiles");
    CountersRound round;
    for (CountersRequest* r : mine) {
        r->runner->serve_in_round(*r, round, gpu, options);
    }
    const double held = round.alone_since ? Seconds(Clock::now() - *round.alone_since).count() : 0.0;
    gpu.change(GpuGate::Use::none);
    counters.reset();
    if (round.checker) {
        // Ended as every checker ends, its context torn down holding the GPU shared: not in the round's turn.
        options.checker_pool->end(std::move(round.checker));
    }
    if (options.trace != nullptr) {
        options.trace->record({{"event", "counters_round"},
                               {"checker", program},
                               {"jobs", mine.size()},
                               {"failed", round.failed},
                               {"checkers", round.checkers_started},
                               {"held", held},
                               {"waited", round.waited_for_alone},
                               {"seconds", Seconds(Clock::now() - started).count()}});
    }
}

void CaseRunner::serve_in_round(CountersRequest& r, CountersRound& round, GpuGate::Hold& gpu,
                                const RunOptions& options) {
    const auto job_started = Clock::now();
    std::string why;
    if (!round.checker) {
        round.checker = start_round_checker(gpu, why);
        ++round.checkers_started;
    }
    if (!round.checker) {
        r.profile = {{"problem", "the profiling checker did not start: " + why}};
        ++round.failed;
        return;
    }
    if (gpu.held() != GpuGate::Use::exclusive) {
        const auto asked = Clock::now();
        gpu.change(GpuGate::Use::exclusive);
        round.alone_since = Clock::now();
        round.waited_for_alone += Seconds(*round.alone_since - asked).count();
    }
    bool usable = false;
    r.profile = counters_job(*round.checker, r.case_index, r.call_ms, gpu, usable);
    r.job_seconds = Seconds(Clock::now() - job_started).count();
    if (!r.profile.contains("launches")) {
        ++round.failed;
    }
    if (!usable) {
        end_round_checker(round.checker);
    }
    if (options.trace != nullptr) {
        options.trace->record({{"event", "counters_job"},
                               {"submission", options_.trace_label},
                               {"case", cases_[r.case_index].id},
                               {"seconds", r.job_seconds},
                               {"profiled", r.profile.contains("launches")},
                               {"detail", r.profile.value("problem", "")}});
    }
}

}  // namespace cugrade
