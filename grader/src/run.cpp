#include "cugrade/run.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <optional>

#include "cugrade/process.hpp"
#include "protocol.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

using Seconds = std::chrono::duration<double>;

Clock::time_point after(double seconds) { return Clock::now() + std::chrono::duration_cast<Clock::duration>(Seconds(seconds)); }

// What became of the case that was running when the process ended without reporting it.
CaseResult interrupted(const ExitStatus& status, double case_seconds) {
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

}  // namespace

nlohmann::json make_plan(const std::vector<const CasePlan*>& cases, const Rubric& rubric) {
    nlohmann::json plan = {{"cases", nlohmann::json::array()}};
    for (const CasePlan* c : cases) {
        nlohmann::json timing = nullptr;
        if (c->timed && rubric.speed) {
            timing = {{"warmup", rubric.speed->warmup}, {"samples", rubric.speed->samples}};
        }
        plan["cases"].push_back({{"id", c->id},
                                 {"size", c->size},
                                 {"input",
                                  {{"name", c->input.name},
                                   {"kind", c->input.kind},
                                   {"low", c->input.low},
                                   {"high", c->input.high}}},
                                 {"seed", c->seed},
                                 {"calls", rubric.calls_per_case},
                                 {"lambda", rubric.tolerance_lambda},
                                 {"timing", timing}});
    }
    return plan;
}

RunResult run_cases(const fs::path& program, const std::vector<CasePlan>& cases, const Rubric& rubric,
                    const RunOptions& options) {
    RunResult run;
    run.cases.resize(cases.size());
    std::map<std::string, std::size_t> index_of;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        index_of[cases[i].id] = i;
    }
    std::vector<bool> done(cases.size(), false);
    const auto remaining = [&] {
        std::vector<const CasePlan*> left;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            if (!done[i]) {
                left.push_back(&cases[i]);
            }
        }
        return left;
    };
    const auto settle = [&](std::size_t i, CaseResult result) {
        run.cases[i] = std::move(result);
        done[i] = true;
    };

    for (auto left = remaining(); !left.empty(); left = remaining()) {
        const fs::path plan_file = options.work_dir / fmt::format("plan-{}.json", run.processes + 1);
        std::ofstream(plan_file) << make_plan(left, rubric).dump(2);

        ProcessOptions process;
        process.argv = {fs::absolute(program).string(), plan_file.string()};
        process.working_directory = options.work_dir;
        process.result_channel = true;
        process.output_limit = options.output_limit > run.output.size() ? options.output_limit - run.output.size() : 0;
        ChildProcess child(process);
        ++run.processes;

        constexpr std::size_t none = static_cast<std::size_t>(-1);
        std::size_t current = none;  // the case the harness is running
        std::optional<std::string> fatal;
        bool started_any = false;
        bool killed_at_deadline = false;
        auto deadline = after(options.startup_seconds);
        std::string line;
        while (true) {
            const auto next = child.next_line(line, deadline);
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
            const std::string event = record.value("event", "");
            const std::string id = record.value("case", "");
            if (event == "start" && index_of.count(id) != 0 && !done[index_of[id]]) {
                current = index_of[id];
                started_any = true;
                deadline = after(cases[current].case_seconds);
            } else if (event == "result" && current != none && id == cases[current].id) {
                CaseResult result;
                result.status = status_from_string(record.value("status", "")).value_or(Status::harness_error);
                result.detail = record.value("detail", "");
                if (record.contains("measurements") && record["measurements"].is_object()) {
                    result.measurements = record["measurements"];
                }
                settle(current, std::move(result));
                current = none;
                deadline = after(options.startup_seconds);
            } else if (event == "fatal") {
                fatal = record.value("detail", "the harness stopped");
            }
        }
        const ExitStatus status = child.finish(after(5.0));
        ExitStatus as_seen = status;
        as_seen.timed_out = as_seen.timed_out || killed_at_deadline;
        run.output += child.output();
        run.output_truncated = run.output_truncated || child.output_truncated();

        if (current != none) {
            settle(current, interrupted(as_seen, cases[current].case_seconds));
        } else if (!started_any) {
            // It ended before its first case: whatever stopped it would stop every restart too.
            CaseResult result;
            if (fatal) {
                result = {Status::harness_error, *fatal};
            } else if (as_seen.timed_out) {
                result = {Status::timed_out, fmt::format("the program did not start its first case within {} s",
                                                         options.startup_seconds)};
            } else {
                result = {as_seen.signal != 0 ? Status::crashed : Status::exited_early,
                          fmt::format("the program {} before running any case", as_seen.describe())};
            }
            for (const CasePlan* c : remaining()) {
                settle(index_of[c->id], result);
            }
        }
    }
    return run;
}

}  // namespace cugrade
