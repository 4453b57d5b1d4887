// What the failing cases of one submission have in common: a diagnosis from the verdicts alone.
#pragma once

#include <vector>

#include "base/diagnosis.hpp"
#include "score/score.hpp"

namespace cugrade {

// What the visible correctness cases that failed (wrong answer, CUDA error, time limit) have in common that the
// visible cases that passed do not, from the rubric's own sizes and inputs and from which call failed: every pattern
// that separates the two. Needs at least two failures, and but for a failure on a later call, one pass; races and the
// speed test have their own explanations and are left out.
std::vector<Diagnosis> failure_patterns(const std::vector<ScoredCase>& cases);

}  // namespace cugrade
