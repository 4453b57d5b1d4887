// The verdict of one case.
#pragma once

#include <optional>
#include <string>

namespace cugrade {

enum class Status {
    passed,               // correct (and, for the speed test, in the top tier)
    slow,                 // correct, but the speed test earned less than its top tier
    invalid_measurement,  // correct, but timed faster than the memory system allows: no speed points
    wrong_answer,         // ran, and a result was wrong or missing
    race,                 // results were right, but compute-sanitizer found a data race on shared memory
    memory_error,         // compute-sanitizer memcheck found an access outside every allocation, whatever the result
    rejected,        // the submission broke a rule: a forbidden API, a symbol it may not define, host-side computing
    build_failed,    // the submission did not compile or link
    timed_out,       // the case ran past its wall-clock limit
    crashed,         // the process died of a signal during the case
    limit_exceeded,  // a resource limit ended the process: output, CPU time or file size
    cuda_error,      // a CUDA call or kernel of the case failed (illegal address, bad launch, ...)
    exited_early,    // the process exited before reporting the case
    skipped,         // not run: no GPU is visible
    harness_error,   // the grader's side failed; not the submission's fault
};

std::string to_string(Status status);
std::optional<Status> status_from_string(const std::string& text);

// The words a report shows: "wrong answer", "timed out".
std::string display_name(Status status);

// The case ran to an answer the harness checked, right or wrong. Only such a result can a sanitizer's report overrule
// (a race, a memory error) or another order of the threads change: a crash, a fault or a time-out stays what it is.
bool checked_answer(Status status);

}  // namespace cugrade
