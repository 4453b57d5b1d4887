// The JSON forms of the case plan's types (case_plan.hpp), nlohmann's type macros: how the grader writes a plan and
// the harness's case loop reads it. Only host code includes this; an exercise's CUDA translation unit never does.
#pragma once

#include <nlohmann/json.hpp>

#include "case_plan.hpp"

namespace cugrade::plan {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Distribution, name, kind, low, high, value, min_at, max_at, infinities)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Input, distribution, seed)
NLOHMANN_JSON_SERIALIZE_ENUM(SpeedMetric, {{SpeedMetric::ratio, "ratio"}, {SpeedMetric::bandwidth, "bandwidth"}})
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Sampling, warmup, min_samples, max_samples, target_rse, max_seconds)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Timing, sampling, metric, boundaries)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Case, id, shape, inputs, parameters, calls, lambda, timed, timing)

}  // namespace cugrade::plan
