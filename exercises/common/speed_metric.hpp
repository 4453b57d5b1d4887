// The speed figures of one timed run, computed in one place for the harness (which samples until the tier is
// certain), the grader (which scores) and `cugrade bench` (which reports). Plain C++: no CUDA here.
#pragma once

#include <cmath>

#include "case_plan.hpp"

namespace cugrade::speed {

struct Figures {
    double ratio = 0.0;          // the submission's median time over the reference's
    double gb_per_s = 0.0;       // the bytes the exercise must move, over the submission's median time
    double copy_fraction = 0.0;  // gb_per_s over the device-to-device copy bandwidth of the same run
};

// `bytes` is what the exercise must move at least; the copy bandwidth counts bytes read and written.
inline Figures figures(double submission_ms, double reference_ms, double bytes, double copy_gbps) {
    Figures f;
    f.ratio = reference_ms > 0.0 ? submission_ms / reference_ms : 0.0;
    f.gb_per_s = submission_ms > 0.0 ? bytes / (submission_ms * 1e-3) / 1e9 : 0.0;
    f.copy_fraction = copy_gbps > 0.0 ? f.gb_per_s / copy_gbps : 0.0;
    return f;
}

// The value the rubric's tiers bound: a ratio (lower is faster) or a share of the copy bandwidth (higher is).
inline double metric_value(plan::SpeedMetric metric, const Figures& f) {
    return metric == plan::SpeedMetric::ratio ? f.ratio : f.copy_fraction;
}

// About two standard errors of the metric, from the relative standard errors of the two medians: a ratio carries
// both, a bandwidth only the submission's.
inline double metric_uncertainty(plan::SpeedMetric metric, double value, double submission_rse, double reference_rse) {
    return 2.0 * value *
           (metric == plan::SpeedMetric::ratio ? std::hypot(submission_rse, reference_rse) : submission_rse);
}

// Whether `value` reaches a tier's bound.
inline bool reaches(plan::SpeedMetric metric, double value, double bound) {
    return metric == plan::SpeedMetric::ratio ? value <= bound : value >= bound;
}

}  // namespace cugrade::speed
