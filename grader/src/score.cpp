#include "cugrade/score.hpp"

#include <fmt/format.h>

namespace cugrade {
namespace {

const SpeedTier* tier_for(const SpeedTest& speed, double ratio) {
    for (const auto& tier : speed.tiers) {
        if (ratio <= tier.max_ratio) {
            return &tier;
        }
    }
    return nullptr;
}

void score_speed(ScoredCase& scored, const SpeedTest& speed) {
    const double submission_ms = scored.measurements.value("submission_ms", 0.0);
    const double reference_ms = scored.measurements.value("reference_ms", 0.0);
    const double bytes = scored.measurements.value("bytes", 0.0);
    if (!(submission_ms > 0.0) || !(reference_ms > 0.0)) {
        scored.status = Status::harness_error;
        scored.detail = "the harness reported no timing for the speed test";
        return;
    }
    const double ratio = submission_ms / reference_ms;
    scored.measurements["ratio"] = ratio;
    scored.measurements["gb_per_s"] = bytes / (submission_ms * 1e-3) / 1e9;
    std::string detail = fmt::format("{:.2f}x the reference's time: {:.3f} ms vs {:.3f} ms ({:.0f} GB/s, median of {})",
                                     ratio, submission_ms, reference_ms, scored.measurements["gb_per_s"].get<double>(),
                                     scored.measurements.value("samples", 0));
    const SpeedTier* tier = tier_for(speed, ratio);
    scored.points = tier != nullptr ? tier->points : 0.0;
    scored.status = tier == &speed.tiers.front() ? Status::passed : Status::slow;
    if (scored.status == Status::slow) {
        // Say what the next step up needs, so the student knows how far there is to go.
        const SpeedTier* next = &speed.tiers.front();
        for (const auto& candidate : speed.tiers) {
            if (candidate.max_ratio < ratio) {
                next = &candidate;
            }
        }
        detail += fmt::format("; {:.2f}x or faster earns {}", next->max_ratio, format_points(next->points));
    }
    scored.detail = detail;
}

}  // namespace

std::string format_points(double points) {
    std::string text = fmt::format("{:.2f}", points);
    while (text.back() == '0') {
        text.pop_back();
    }
    if (text.back() == '.') {
        text.pop_back();
    }
    return text;
}

ScoredCase score_case(const CasePlan& plan, const CaseResult& result, const Rubric& rubric) {
    ScoredCase scored{plan, result.status, result.detail, result.measurements, 0.0};
    if (scored.status != Status::passed) {
        return scored;
    }
    if (plan.timed && rubric.speed) {
        score_speed(scored, *rubric.speed);
    } else {
        scored.points = plan.max_points;
    }
    return scored;
}

}  // namespace cugrade
