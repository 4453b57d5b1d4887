// The grading contexts a batch's workers run in: which GPUs it grades on, how many submissions each GPU grades at
// once (its gate's places), and what the workers on one GPU share (its gate, its kept checkers, its rounds of
// profiles, the profiles of code already read).
#pragma once

#include <vector>

#include "batch/batch.hpp"
#include "grading/grading.hpp"

namespace cugrade {

// The contexts the grading workers run in: on each GPU chosen (`options.gpus`, else every GPU CUDA shows), workers
// sharing the GPU's gate; without a GPU, `jobs` contexts (grading then only reads builds and inspects them). Throws
// UsageError for GPUs that cannot be chosen, std::runtime_error where no GPU can be graded on.
std::vector<GradingContext> gpu_contexts(const GradingContext& base, const BatchOptions& options, unsigned jobs);

// Submissions graded at once over all GPUs: one per worker, where workers take no places; else the places of each
// GPU's gate.
unsigned submissions_at_once(const std::vector<GradingContext>& contexts);

}  // namespace cugrade
