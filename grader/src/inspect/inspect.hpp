// Static checks on the student's compiled object, before any of its code runs, by allowlist:
// - what it defines: its entry points and its own internal names; nothing that replaces a name the grader's program
//   or the libraries it loads already have (the compiler's own inline and template instantiations aside);
// - what it uses: no library the exercise refuses (api_policy.hpp), found by the headers its own lines include
//   (included_headers.hpp) and, for a library declared by hand, by its names in the object;
// - what it calls: only what api_policy.hpp allows;
// - what it is made of: only the sections compilers make for ordinary code, no indirect functions; and, read from
//   the linked program, none of its code among what runs before main (link_object.hpp moves its initialisers
//   where the runner calls them);
// - what its device code computes with: none of the arithmetic the contract refuses (arithmetic_check.hpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "build/build.hpp"
#include "course/contract_rules.hpp"
#include "course/rubric.hpp"
#include "course/submission.hpp"

namespace cugrade {

struct Finding {
    std::string rule;     // "defines", "forbidden-library", "forbidden-function", "runs-before-main", "section",
                          // "host-copy", "arithmetic"
    std::string symbol;   // as a person reads it: "cudaEventElapsedTime", "cub::DeviceReduce::Sum", "fork()"
    std::string message;  // "sum.cu:12: calls fork(), which ..."
};

struct Inspection {
    std::vector<Finding> findings;
    bool ok() const { return findings.empty(); }
};

// Inspects the built object of `build` (which must have compiled); `submission` gives the source for the lines of
// messages and the path as the user gave it. The exercise's contract rules (exercise.yaml's `rules`) are the base
// of what it may use, `rules` (the rubric's) adjusts them.
Inspection inspect_submission(const BuildResult& build, const SubmissionFile& submission, const Exercise& exercise,
                              const ApiRules& rules, const Toolchain& toolchain);

// The libraries alone, for a submission that compiled but did not link: a call into a refused library fails the link
// (the program has no such library), and that is what the student needs to hear.
Inspection inspect_libraries(const BuildResult& build, const SubmissionFile& submission, const Exercise& exercise,
                             const ApiRules& rules, const Toolchain& toolchain);

}  // namespace cugrade
