// Why points were lost, in words a student can act on. A diagnosis names a cause and shows the evidence; it never
// names a hidden case, its size or its input.
#pragma once

#include <string>
#include <vector>

#include "cugrade/score.hpp"

namespace cugrade {

struct Diagnosis {
    std::string kind;                   // "pattern": what the failing cases share
    std::string summary;                // one line: the cause, the same words for every student it fits
    std::string scope;                  // how many cases show it: "9 of 12 visible cases"
    std::vector<std::string> evidence;  // the visible cases that show it
    std::string hint;                   // what usually causes it and where the student README teaches the fix
};

// What the visible correctness cases that failed (wrong answer, CUDA error, time limit) have in common that the
// visible cases that passed do not, from the rubric's own sizes and inputs and from which call failed: every pattern
// that separates the two. Needs at least two failures, and but for a failure on a later call, one pass; races and the
// speed test have their own explanations and are left out.
std::vector<Diagnosis> failure_patterns(const std::vector<ScoredCase>& cases);

}  // namespace cugrade
