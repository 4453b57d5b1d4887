// What running a submission's cases gives: each case's result, what the processes printed, and the run's facts.
// Plain data, made by run/ and read by everything above it.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "base/diagnosis.hpp"
#include "base/stage_seconds.hpp"
#include "base/status.hpp"

namespace cugrade {

struct CaseResult {
    Status status = Status::harness_error;
    std::string detail;
    nlohmann::json measurements = nlohmann::json::object();
    std::optional<Diagnosis> diagnosis = std::nullopt;  // what a rerun under compute-sanitizer found the cause to be
};

// What harness processes printed, capped.
struct ProgramOutput {
    std::string text;
    bool truncated = false;
};

struct RunResult {
    std::vector<CaseResult> cases;  // one per planned case, in plan order
    // What was printed from the first hidden case on is kept apart, so that nothing printed after a hidden case's
    // input was seen (a size kept in a static and printed later, say) reaches the output a student is shown.
    ProgramOutput output;                      // what the processes of visible cases printed
    ProgramOutput hidden_output;               // what the processes that ran hidden cases printed: instructors only
    int processes = 0;                         // how many times the harness was started
    std::vector<std::string> protections;      // what the harness reported it applied, beside the sandbox's own
    int forged_records = 0;                    // records on the result channel without the run's token, ignored
    StageSeconds seconds;                      // where the time went (build stays 0 here)
    std::vector<std::string> diagnosis_notes;  // why a diagnosis could not be made: the profiler could not run, say
};

}  // namespace cugrade
