// The submission's initialisers, which the grader moved out of the loader's reach (protocol.hpp), run when the
// process that holds the submission (the runner) has locked itself down.
#pragma once

#include "protocol.hpp"

namespace cugrade {

#define CUGRADE_SECTION_BOUND(prefix, section) CUGRADE_SECTION_BOUND_NAME(prefix, section)
#define CUGRADE_SECTION_BOUND_NAME(prefix, section) prefix##section
using SubmissionInitialiser = void (*)();
extern "C" SubmissionInitialiser CUGRADE_SECTION_BOUND(__start_, CUGRADE_SUBMISSION_INIT_SECTION)[]
    __attribute__((weak));
extern "C" SubmissionInitialiser CUGRADE_SECTION_BOUND(__stop_, CUGRADE_SUBMISSION_INIT_SECTION)[]
    __attribute__((weak));

// Registers the submission's device code and constructs its globals: its first code to run, after the process is
// locked down, in the order the loader would have run it.
inline void initialise_submission() {
    SubmissionInitialiser* const first = CUGRADE_SECTION_BOUND(__start_, CUGRADE_SUBMISSION_INIT_SECTION);
    SubmissionInitialiser* const last = CUGRADE_SECTION_BOUND(__stop_, CUGRADE_SUBMISSION_INIT_SECTION);
    for (SubmissionInitialiser* f = first; f != nullptr && f != last; ++f) {
        if (*f != nullptr) {
            (*f)();
        }
    }
}

}  // namespace cugrade
