#include "run/sanitizer_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <string>

#include "diagnose/sanitizer_report.hpp"
#include "run/harness_records.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// What a case's process says of it when it ended before the harness reported the case (case_runner.cpp).
bool unreported_by_harness(Status status) {
    return status == Status::timed_out || status == Status::crashed || status == Status::limit_exceeded ||
           status == Status::exited_early;
}

// The checked cases whose verdict a tool's report could change: those that gave an answer, right or wrong. A case
// that crashed, faulted or hung keeps its verdict, and costs no process under the tool.
std::vector<std::size_t> with_an_answer(const std::vector<std::size_t>& checked, const RunResult& result) {
    std::vector<std::size_t> answered;
    std::copy_if(checked.begin(), checked.end(), std::back_inserter(answered),
                 [&](std::size_t i) { return checked_answer(result.cases[i].status); });
    return answered;
}

// What the runner of a check under a tool, started at `started`, cost: its processes and waits, the rest its stage's.
void add_check_costs(RunResult& result, const RunResult& check, Clock::time_point started) {
    add_protections(result.protections, check.protections);
    result.processes += check.processes;
    result.forged_records += check.forged_records;
    result.seconds.add_waits(check.seconds);
    result.seconds.race_check += Seconds(Clock::now() - started).count() - check.seconds.waits();
}

bool sanitizer_found_hazard(const ExitStatus& status) {
    return status.exited() && status.code == sanitizer_error_exit_code;
}

bool hazard_reported(const CaseRunner::Ended& ended) {
    return sanitizer_found_hazard(ended.status) || !first_race_report(ended.output).empty();
}

// A race found: the cause to report, whether or not it spoiled the graded run's result; the diagnosis says where it
// is.
void mark_race(CaseResult& graded, const std::string& output) {
    const std::string also_wrong =
        graded.status == Status::wrong_answer ? " (the result was wrong too: " + graded.detail + ")" : "";
    graded.status = Status::race;
    graded.detail = "compute-sanitizer racecheck found a race between threads" + also_wrong;
    graded.diagnosis = race_diagnosis(output);
    if (!graded.diagnosis) {
        graded.diagnosis = Diagnosis{"race",
                                     "compute-sanitizer racecheck: a race on shared memory",
                                     "this case",
                                     {},
                                     "a __syncthreads() is missing between a write and "
                                     "another thread's read",
                                     "",
                                     "a race on shared memory (racecheck)",
                                     "barrier"};
    }
    graded.diagnosis->scope = "this case";
}

// The checked cases of each visibility: the visible, then the hidden.
std::array<std::vector<std::size_t>, 2> by_visibility(const std::vector<CasePlan>& cases,
                                                      const std::vector<std::size_t>& checked) {
    std::array<std::vector<std::size_t>, 2> visible_then_hidden;
    for (const std::size_t i : checked) {
        visible_then_hidden[cases[i].visibility == Visibility::hidden ? 1 : 0].push_back(i);
    }
    return visible_then_hidden;
}

// In a batch, a checker kept across submissions runs them first, without racecheck's start. Most submissions have
// nothing reported. Where a report came, the job's parts still decide the cases before it and those with reports of
// their own (its checker had reported nothing before, so no report of this job's was left out ahead of them); a case
// after a report without one of its own, and any the job did not finish, run in another kept job, first in it, as
// long as each job decides a case and none runs past its limit; what is left then goes to a fresh process. Returns
// the cases left.
std::vector<std::size_t> race_check_in_kept_jobs(CaseRunner& runner, const std::vector<std::string>& racecheck,
                                                 std::vector<std::size_t> undecided, RunResult& result) {
    while (!undecided.empty()) {
        const CaseRunner::KeptJob job = runner.run_in_kept_checker(undecided, racecheck, {.tool = "racecheck"});
        if (job.nothing_reported) {
            undecided.clear();
            break;
        }
        bool reported_before = false;
        const std::size_t before = undecided.size();
        for (const auto& [i, part] : job.finished_parts) {
            const bool reported = !first_race_report(part).empty();
            if (reported) {
                mark_race(result.cases[i], part);
            }
            if (reported || !reported_before) {
                std::erase(undecided, i);
            }
            reported_before = reported_before || reported;
        }
        if (undecided.size() == before || job.past_limit) {
            break;
        }
    }
    return undecided;
}

// Where racecheck's processes reported hazards, by process: the place of its first case with a report, and its last
// case's part, the summary's.
struct ReportsByProcess {
    std::map<int, int> first_report;
    std::map<int, CaseRunner::CaseOutput> last_part;
};

ReportsByProcess reports_by_process(const CaseRunner& runner, const std::vector<std::size_t>& together) {
    ReportsByProcess reports;
    for (const std::size_t i : together) {
        const auto part = runner.case_output(i);
        if (part.process >= 0 && !first_race_report(part.text).empty()) {
            const auto [at, added] = reports.first_report.emplace(part.process, part.position);
            at->second = std::min(at->second, part.position);
        }
        if (part.process >= 0 && part.position >= reports.last_part[part.process].position) {
            reports.last_part[part.process] = part;
        }
    }
    return reports;
}

// Whether racecheck printed every report it found in `process` (a process numbered n is the runner's n-th; the
// runner had run `processes_before` before these).
bool printed_every_report(const std::vector<CaseRunner::Ended>& processes, int processes_before,
                          ReportsByProcess& reports, int process) {
    const std::size_t k = static_cast<std::size_t>(process - processes_before - 1);
    if (k >= processes.size() || !processes[k].status.exited() || processes[k].status.timed_out) {
        return false;
    }
    return race_reports_left_out(reports.last_part[process].text) == 0;
}

// The cases `together` under one racecheck, case markers telling their parts apart; returns the cases to run again
// alone.
std::vector<std::size_t> race_check_together(CaseRunner& runner, const std::vector<std::string>& racecheck,
                                             const std::vector<std::size_t>& together, RunResult& result) {
    const int processes_before = runner.result().processes;
    const auto processes = runner.run(together, racecheck, {.tool = "racecheck", .case_markers = true});
    if (std::none_of(processes.begin(), processes.end(), hazard_reported)) {
        return {};
    }
    const bool cut = std::any_of(processes.begin(), processes.end(), [](const auto& p) { return p.truncated; });
    ReportsByProcess reports = reports_by_process(runner, together);
    if (cut || reports.first_report.empty()) {
        runner.reopen(together);
        return together;
    }
    std::vector<std::size_t> alone;
    for (const std::size_t i : together) {
        const auto part = runner.case_output(i);
        const auto first = reports.first_report.find(part.process);
        if (!first_race_report(part.text).empty()) {
            mark_race(result.cases[i], part.text);
        } else if (part.process < 0 || (first != reports.first_report.end() && part.position > first->second &&
                                        !printed_every_report(processes, processes_before, reports, part.process))) {
            runner.reopen({i});
            alone.push_back(i);
        }
    }
    return alone;
}

void race_check_one_at_a_time(CaseRunner& runner, const std::vector<std::string>& racecheck,
                              const std::vector<std::size_t>& one_at_a_time, RunResult& result) {
    for (const std::size_t i : one_at_a_time) {
        const auto processes = runner.run({i}, racecheck, {.tool = "racecheck"});
        if (processes.empty()) {
            continue;
        }
        const auto& [status, output, truncated] = processes.back();
        const bool hazard = (sanitizer_found_hazard(status) && checked_answer(runner.result().cases[i].status)) ||
                            !first_race_report(output).empty();
        if (hazard) {
            mark_race(result.cases[i], output);
        }
    }
}

// A case whose process under racecheck ended before the harness reported it (racecheck slows a racy kernel past the
// case's limit, say) was not checked: racecheck's verdict is its, saying why; a hazard reported before it decided
// above. What the harness reported there (a fault, a write past an output) is the graded run's to say.
void take_unreported_verdicts(CaseRunner& runner, const std::vector<std::size_t>& run_fresh, RunResult& result) {
    for (const std::size_t i : run_fresh) {
        const CaseResult& under_racecheck = runner.result().cases[i];
        if (result.cases[i].status != Status::race && unreported_by_harness(under_racecheck.status)) {
            result.cases[i] = under_racecheck;
        }
    }
}

}  // namespace

void check_races(const fs::path& program, const std::vector<CasePlan>& cases,
                 const std::vector<std::size_t>& race_checked, const RunOptions& options, RunResult& result) {
    const std::vector<std::size_t> answered = with_an_answer(race_checked, result);
    if (answered.empty()) {
        return;
    }
    const auto started = Clock::now();
    const std::vector<std::string> racecheck = sanitizer_command(options.compute_sanitizer, SanitizerTool::racecheck);
    CaseRunner runner(program, cases, options);
    // The race-check cases of each visibility run together under one compute-sanitizer, whose start costs seconds,
    // the harness marking where each case starts in what it prints: a hazard reported within a case's part is that
    // case's, and a case without one that ran before the first report of its process had none. A case after it
    // without a report had none either where racecheck's summary says it printed every report; where it left some
    // out past its print limit, or the process did not end by itself (no summary to trust), that case runs again
    // alone, as every case does where nothing can be told (no part holds the report, or the output was cut).
    std::vector<std::size_t> one_at_a_time;
    std::vector<std::size_t> run_fresh;  // the cases whose verdict under racecheck is a fresh process's
    for (const std::vector<std::size_t>& checked : by_visibility(cases, answered)) {
        if (checked.empty()) {
            continue;
        }
        const std::vector<std::size_t> together = race_check_in_kept_jobs(runner, racecheck, checked, result);
        run_fresh.insert(run_fresh.end(), together.begin(), together.end());
        const std::vector<std::size_t> alone =
            together.size() < 2 ? together : race_check_together(runner, racecheck, together, result);
        one_at_a_time.insert(one_at_a_time.end(), alone.begin(), alone.end());
    }
    std::sort(one_at_a_time.begin(), one_at_a_time.end());
    race_check_one_at_a_time(runner, racecheck, one_at_a_time, result);
    take_unreported_verdicts(runner, run_fresh, result);
    add_check_costs(result, runner.result(), started);
}

namespace {

bool memory_error_reported(const CaseRunner::Ended& ended) {
    return ended.status.exited() && ended.status.code == sanitizer_error_exit_code;
}

void flag_memory_error(CaseResult& graded, const std::string& output, const RunOptions& options) {
    const std::string also_wrong =
        graded.status == Status::wrong_answer ? " (the result was wrong too: " + graded.detail + ")" : "";
    graded.status = Status::memory_error;
    graded.detail = "compute-sanitizer memcheck found an access outside every allocation" + also_wrong;
    graded.diagnosis = first_sanitizer_error(SanitizerTool::memcheck, output, options.student_files);
    if (graded.diagnosis) {
        graded.diagnosis->scope = "this case";
    }
}

// The cases `together` under one memcheck; returns the cases to run again alone.
std::vector<std::size_t> memcheck_together(CaseRunner& runner, const std::vector<std::string>& memcheck,
                                           const std::vector<std::size_t>& together, const RunOptions& options,
                                           RunResult& result) {
    const auto processes = runner.run(together, memcheck, {.tool = "memcheck"});
    std::vector<const CaseRunner::Ended*> reporting;
    for (const auto& process : processes) {
        if (memory_error_reported(process)) {
            reporting.push_back(&process);
        }
    }
    if (reporting.empty()) {
        return {};
    }
    if (together.size() == 1) {
        flag_memory_error(result.cases[together.front()], reporting.front()->output, options);
        return {};
    }
    // Memcheck stops the launch it reports, so the harness sees that call fail, calls the case a CUDA error
    // and ends its process: each reporting process then holds one failed case, its last, in the order run.
    // Where the count differs, each case runs alone to say which it was.
    std::vector<std::size_t> failed;
    for (const std::size_t i : together) {
        const Status under_memcheck = runner.result().cases[i].status;
        if (under_memcheck != Status::passed && under_memcheck != Status::wrong_answer) {
            failed.push_back(i);
        }
    }
    if (failed.size() != reporting.size()) {
        runner.reopen(together);
        return together;
    }
    for (std::size_t k = 0; k < failed.size(); ++k) {
        flag_memory_error(result.cases[failed[k]], reporting[k]->output, options);
    }
    return {};
}

void memcheck_one_at_a_time(CaseRunner& runner, const std::vector<std::string>& memcheck,
                            const std::vector<std::size_t>& one_at_a_time, const RunOptions& options,
                            RunResult& result) {
    for (const std::size_t i : one_at_a_time) {
        std::string output;
        bool reported = false;
        for (const auto& process : runner.run({i}, memcheck, {.tool = "memcheck"})) {
            output += process.output;
            reported = reported || memory_error_reported(process);
        }
        if (reported) {
            flag_memory_error(result.cases[i], output, options);
        }
    }
}

}  // namespace

void check_memory(const fs::path& program, const std::vector<CasePlan>& cases,
                  const std::vector<std::size_t>& memory_checked, const RunOptions& options, RunResult& result) {
    // A race found already is not run again either.
    const std::vector<std::size_t> answered = with_an_answer(memory_checked, result);
    if (answered.empty()) {
        return;
    }
    const auto started = Clock::now();
    const std::vector<std::string> memcheck = sanitizer_command(options.compute_sanitizer, SanitizerTool::memcheck);
    CaseRunner runner(program, cases, options);
    std::vector<std::size_t> one_at_a_time;
    for (const std::vector<std::size_t>& together : by_visibility(cases, answered)) {
        // In a batch a memcheck kept across submissions says whether memcheck has anything to say of them; where it
        // has not, their verdicts stand as the graded run gave them, without a memcheck start.
        if (together.empty() || runner.nothing_reported_in_kept_checker(together, memcheck, {.tool = "memcheck"})) {
            continue;
        }
        const std::vector<std::size_t> alone = memcheck_together(runner, memcheck, together, options, result);
        one_at_a_time.insert(one_at_a_time.end(), alone.begin(), alone.end());
    }
    std::sort(one_at_a_time.begin(), one_at_a_time.end());
    memcheck_one_at_a_time(runner, memcheck, one_at_a_time, options, result);
    add_check_costs(result, runner.result(), started);
}

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

namespace {

bool needs_diagnosis(const CasePlan& plan, Status status) {
    return !plan.timed && !plan.race_check &&
           (status == Status::wrong_answer || status == Status::cuda_error || status == Status::crashed ||
            status == Status::exited_early);
}

// The failing case to diagnose: a visible one before a hidden one, the smallest first.
std::optional<std::size_t> case_to_diagnose(const std::vector<CasePlan>& cases, const RunResult& result) {
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
    return chosen;
}

// The reruns of the chosen case under the tools, in a runner of their own whose cases and options give each rerun
// its part of the budget.
struct DiagnosisReruns {
    const std::vector<CasePlan>& cases;
    const RunOptions& options;
    std::size_t chosen;
    std::vector<CasePlan>& rerun_cases;
    RunOptions& rerun_options;
    CaseRunner& runner;
    Clock::time_point started;
    Clock::time_point budget_end;
    std::string where;
};

// Gives the rerun what is left of the budget; false, with a note, where too little is left for one.
bool budget_for(const DiagnosisReruns& reruns, SanitizerTool tool, RunResult& result) {
    const double left = Seconds(reruns.budget_end - Clock::now()).count();
    if (left < 1.0) {
        result.diagnosis_notes.push_back(
            fmt::format("compute-sanitizer's {} did not run {}: the reruns' {} s were spent", to_string(tool),
                        reruns.where, reruns.options.diagnosis_seconds));
        return false;
    }
    reruns.rerun_cases[reruns.chosen].case_seconds = std::min(reruns.cases[reruns.chosen].case_seconds, left);
    reruns.rerun_options.sanitizer_startup_seconds = left;
    reruns.runner.reopen({reruns.chosen});
    return true;
}

// The chosen case rerun under `tool`; false once the reruns are over: a cause found, the budget spent, or a rerun
// stopped.
bool rerun_under(const DiagnosisReruns& reruns, SanitizerTool tool, RunResult& result) {
    if (!budget_for(reruns, tool, result)) {
        return false;
    }
    const std::vector<std::string> command = sanitizer_command(reruns.options.compute_sanitizer, tool);
    const RunMode mode{.bare_buffers = true, .tool = to_string(tool)};
    // In a batch a checker kept across submissions says whether the tool has anything to say of a wrong
    // answer, without the tool's start: most wrong answers' reruns under memcheck and synccheck find nothing,
    // and the next tool is tried. What a tool found is read from a fresh process, as without a kept checker.
    // Left to a fresh process at once: a crash or an error, which memcheck almost always reports, and
    // initcheck, which reports the grader's own reads of outputs a wrong answer left unwritten about as often
    // as not (a report ends a kept checker).
    if (result.cases[reruns.chosen].status == Status::wrong_answer && tool != SanitizerTool::initcheck) {
        if (reruns.runner.nothing_reported_in_kept_checker({reruns.chosen}, command, mode)) {
            return true;
        }
        if (!budget_for(reruns, tool, result)) {
            return false;
        }
    }
    std::string output;
    bool stopped = false;
    for (const auto& process : reruns.runner.run({reruns.chosen}, command, mode)) {
        output += process.output;
        stopped = stopped || process.status.timed_out;
    }
    if (auto found = first_sanitizer_error(tool, output, reruns.options.student_files)) {
        found->scope = "found " + reruns.where;
        result.cases[reruns.chosen].diagnosis = std::move(*found);
        return false;
    }
    if (stopped) {
        result.diagnosis_notes.push_back(fmt::format("compute-sanitizer's {} stopped after {:.0f} s {}",
                                                     to_string(tool), Seconds(Clock::now() - reruns.started).count(),
                                                     reruns.where));
        return false;
    }
    return true;
}

}  // namespace

void diagnose_failures(const fs::path& program, const std::vector<CasePlan>& cases, const RunOptions& options,
                       RunResult& result) {
    if (options.compute_sanitizer.empty() || !options.diagnose) {
        return;
    }
    const std::optional<std::size_t> chosen = case_to_diagnose(cases, result);
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
    const std::string where =
        cases[*chosen].visibility == Visibility::visible ? "on " + cases[*chosen].id : "on a hidden case";
    const DiagnosisReruns chosen_reruns{cases,  options, *chosen,    reruns, rerun_options,
                                        runner, started, budget_end, where};
    for (const SanitizerTool tool : tools) {
        if (!rerun_under(chosen_reruns, tool, result)) {
            break;
        }
    }
    result.seconds.add_waits(runner.result().seconds);
    result.seconds.diagnosis -= runner.result().seconds.waits();
    result.seconds.diagnosis += Seconds(Clock::now() - started).count();
}

}  // namespace cugrade
