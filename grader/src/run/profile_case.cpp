// A speed test below its top tier profiled for its diagnosis: from the counters its own checker read, or else under
// Nsight Compute in a process of its own.
#include "run/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <tuple>

#include "diagnose/access_width.hpp"
#include "run/case_runner.hpp"
#include "schedule/counters_rounds.hpp"
#include "diagnose/speed_profile.hpp"
#include "base/machine_lock.hpp"
#include "schedule/same_code_profiles.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

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

// The counters a checker read on speed test `i`, whether or not they become its diagnosis: the trace records what
// they cost (`in_round`: read in a round of profiles). Returns their seconds, none where none were read.
double trace_counters(const std::vector<CasePlan>& cases, std::size_t i, const RunOptions& options,
                      const RunResult& result, bool in_round) {
    const auto profile = result.cases[i].measurements.find("kernel_profile");
    if (profile == result.cases[i].measurements.end() || !profile->is_object() || !profile->contains("launches")) {
        return 0.0;
    }
    if (options.trace != nullptr) {
        options.trace->record({{"event", "counters"},
                               {"submission", options.trace_label},
                               {"case", cases[i].id},
                               {"in_round", in_round},
                               {"passes", profile->value("passes", 0)},
                               {"setup_seconds", profile->value("setup_seconds", 0.0)},
                               {"seconds", profile->value("seconds", 0.0)},
                               {"steps", profile->value("steps", nlohmann::json::object())}});
    }
    return profile->value("setup_seconds", 0.0) + profile->value("seconds", 0.0);
}

// The counters the harness read on speed test `i` in its own turn: their seconds, inside the speed test's process
// after its timing, are the diagnosis's.
void count_counters(const std::vector<CasePlan>& cases, std::size_t i, const RunOptions& options, RunResult& result) {
    const double profiled = trace_counters(cases, i, options, result, false);
    if (profiled > 0) {
        const double moved = std::min(profiled, result.seconds.speed);
        result.seconds.speed -= moved;
        result.seconds.diagnosis += moved;
    }
}

// Whether the run loop declined speed test `i` its counters for a batch's round of profiles.
bool deferred_to_round(const CaseResult& timed) {
    const auto profile = timed.measurements.find("kernel_profile");
    return profile != timed.measurements.end() && profile->is_object() && profile->value("deferred", false);
}

// Speed test `i` profiled in a round (counters_rounds.hpp): in a batch its next one, its grading waiting without its
// place; elsewhere a round of its own, in a checker started for it. The round's counters become its own, as if its
// checker had read them. The wait is the student's, the job the diagnosis's.
void read_in_round(const fs::path& program, const std::vector<CasePlan>& cases, std::size_t i,
                   const RunOptions& options, RunResult& result) {
    RunOptions own = options;
    std::optional<CheckerPool> pool;  // the round's checker ends with it
    if (own.checker_pool == nullptr) {
        own.checker_pool = &pool.emplace(nullptr, 0, 1);
    }
    CaseRunner runner(program, cases, own);
    CountersRequest request;
    request.runner = &runner;
    request.case_index = i;
    request.call_ms = result.cases[i].measurements.value("submission_ms", 0.0);
    request.checker = options.shared_program.string();
    double waited = 0.0;
    if (options.counters_rounds != nullptr) {
        waited = options.counters_rounds->profile(request, options.holds_gpu_place);
    } else {
        const auto asked = Clock::now();
        CaseRunner::run_counters_round({&request});
        waited = Seconds(Clock::now() - asked).count();
    }
    result.cases[i].measurements["kernel_profile"] = request.profile;
    result.seconds.round_wait += std::max(0.0, waited - request.job_seconds);
    result.seconds.diagnosis += request.job_seconds;
    trace_counters(cases, i, options, result, true);
}

// The counters the harness read itself on speed test `i` (exercises/common/counter_profile.hpp), turned into its
// diagnosis, or into a note of why there is none (nothing is returned then); else why Nsight Compute is to be asked:
// the harness read no counters, or could not (what it said). A profile refused its turn is left out, saying so.
std::optional<std::string> diagnose_from_counters(const std::vector<CasePlan>& cases, std::size_t i,
                                                  const RunOptions& options, RunResult& result) {
    CaseResult& timed = result.cases[i];
    const auto own = timed.measurements.find("kernel_profile");
    const bool read_here = own != timed.measurements.end() && own->is_object() && own->contains("launches");
    std::optional<nlohmann::json> read_before;
    if (!read_here && options.same_code_profiles != nullptr) {
        read_before = options.same_code_profiles->find(options.same_code, cases[i].id);
    }
    if (read_before && options.trace != nullptr) {
        options.trace->record(
            {{"event", "counters_of_same_code"}, {"submission", options.trace_label}, {"case", cases[i].id}});
    }
    const nlohmann::json* profile = nullptr;
    if (read_before) {
        profile = &*read_before;
    } else if (own != timed.measurements.end() && own->is_object()) {
        profile = &*own;
    }
    if (profile == nullptr) {
        return "the harness read no counters";
    }
    const auto note = [&](const std::string& why) {
        result.diagnosis_notes.push_back("the speed test could not be profiled: " + why.substr(0, 300));
    };
    if (profile->value("unwanted", false)) {
        // Declined while a smaller case was set aside, which then passed alone: Nsight Compute profiles it now.
        return "the checker was declined its counters while a smaller case waited to run again";
    }
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
    try {
        const std::vector<KernelProfile> launches = read_counter_profile(profile->value("launches", nlohmann::json()));
        SpeedTestFigures figures = speed_test_figures(cases[i], timed);
        figures.source = "the GPU's counters";
        figures.access_widths = options.access_widths;
        if (read_here && options.same_code_profiles != nullptr) {
            options.same_code_profiles->keep(options.same_code, cases[i].id, *profile);
        }
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

// The note for a speed test not profiled while a smaller case fails, once.
void note_smaller_case_failed(RunResult& result) {
    const std::string note =
        "the speed test was not profiled: a smaller case failed; it is profiled once every smaller case passes";
    if (std::find(result.diagnosis_notes.begin(), result.diagnosis_notes.end(), note) == result.diagnosis_notes.end()) {
        result.diagnosis_notes.push_back(note);
    }
}

// Nsight Compute's profile of speed test `i` in processes of its own: how they ended, and the report it wrote.
struct NsightProfile {
    std::vector<CaseRunner::Ended> processes;
    std::string csv;
    double waited = 0.0;  // for the GPU alone around the profiled call
};

bool profiler_said(const NsightProfile& profile, const char* words) {
    return profile.csv.find(words) != std::string::npos ||
           (!profile.processes.empty() && profile.processes.back().output.find(words) != std::string::npos);
}

// Speed test `i` under Nsight Compute (started: when its turn at the counters came), once more after a failure that
// another process's use of the GPU may have caused.
NsightProfile profile_under_nsight(const fs::path& program, const std::vector<CasePlan>& cases, std::size_t i,
                                   const RunOptions& options, Clock::time_point started, RunResult& result) {
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
    NsightProfile profile;
    std::tie(profile.processes, profile.csv) = profile_once();
    // Nsight Compute sometimes fails while other processes use the GPU, exit code 9 ("==ERROR== Failed to prepare
    // kernel for profiling", "==ERROR== An error was reported by the driver", both seen on an H200 in a batch): once
    // more, while the budget lasts.
    const bool transient_failure = profiler_said(profile, "Failed to prepare kernel") ||
                                   profiler_said(profile, "An error was reported by the driver");
    if (transient_failure && Seconds(Clock::now() - started).count() < options.diagnosis_seconds / 2) {
        runner.reopen({i});
        std::tie(profile.processes, profile.csv) = profile_once();
    }
    profile.waited = runner.result().seconds.waits();
    result.seconds.add_waits(runner.result().seconds);
    return profile;
}

// Why there is no profile, in the profiler's words: its first error ("==ERROR== ERR_NVGPUCTRPERM ..."), else its
// first warning ("==WARNING== No kernels were profiled"), else the last thing it said, unless it ran out of time
// (then what it said last is whatever it was doing, not why).
std::string no_profile_note(const NsightProfile& profile, const std::string& why) {
    const auto& processes = profile.processes;
    const std::string output = profile.csv + (processes.empty() ? std::string() : processes.back().output);
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
    return fmt::format("the speed test could not be profiled: {}{}", why,
                       said.empty() ? "" : ": " + said.substr(0, 300));
}

// Nsight Compute's report on speed test `i` turned into its diagnosis, or into a note of why there is none.
void diagnose_from_nsight(const std::vector<CasePlan>& cases, std::size_t i, const RunOptions& options,
                          const NsightProfile& profile, RunResult& result) {
    const auto& processes = profile.processes;
    try {
        const auto launches = read_profile(profile.csv);
        if (auto found = speed_diagnosis(launches, speed_test_figures(cases[i], result.cases[i]))) {
            found->scope = "found on " + cases[i].id;
            found->tool_output = profile.csv.substr(0, 64 * 1024);
            result.cases[i].diagnosis = std::move(*found);
        } else if (launches.empty()) {
            result.diagnosis_notes.push_back(
                no_profile_note(profile, "Nsight Compute saw no kernel of the submission's"));
        } else {
            // Its report has the kernels, but no figures to read (a metric it could not collect reads "nan").
            result.diagnosis_notes.push_back(
                "the speed test could not be profiled: Nsight Compute measured no time in the submission's kernels");
        }
    } catch (const std::runtime_error& e) {
        result.diagnosis_notes.push_back(
            no_profile_note(profile, processes.empty() ? e.what()
                                     : processes.back().status.timed_out
                                         ? fmt::format("Nsight Compute stopped after {} s", options.diagnosis_seconds)
                                         : "Nsight Compute " + processes.back().status.describe()));
    }
}

}  // namespace

bool smaller_case_failed(const std::vector<CasePlan>& cases, const std::vector<CaseResult>& results,
                         const std::vector<bool>& decided) {
    for (std::size_t j = 0; j < cases.size() && j < results.size() && j < decided.size(); ++j) {
        // The submission's failures: not a case the grader could not run (no compute-sanitizer, say) or skipped.
        const Status status = results[j].status;
        const bool failed = status != Status::passed && status != Status::harness_error && status != Status::skipped;
        if (!cases[j].timed && decided[j] && failed) {
            return true;
        }
    }
    return false;
}

void profile_case(const fs::path& program, const std::vector<CasePlan>& cases, std::size_t i, const RunOptions& options,
                  RunResult& result) {
    if (!options.diagnose) {
        return;
    }
    count_counters(cases, i, options, result);
    if (smaller_case_failed(cases, result.cases, std::vector<bool>(cases.size(), true))) {
        note_smaller_case_failed(result);
        return;
    }
    const bool same_code_read = options.same_code_profiles != nullptr &&
                                options.same_code_profiles->find(options.same_code, cases[i].id).has_value();
    if (deferred_to_round(result.cases[i]) && !same_code_read) {
        read_in_round(program, cases, i, options, result);
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
    const NsightProfile profile = profile_under_nsight(program, cases, i, options, started, result);
    diagnose_from_nsight(cases, i, options, profile, result);
    result.seconds.diagnosis += Seconds(Clock::now() - started).count() - profile.waited;
}

}  // namespace cugrade
