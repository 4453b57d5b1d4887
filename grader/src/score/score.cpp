#include "score/score.hpp"

#include <fmt/format.h>

#include <cmath>

#include "gpu_conditions.hpp"
#include "speed_metric.hpp"

namespace cugrade {
namespace {

// Points for a metric value: the first tier it reaches (stepped), or the straight line between the two tiers it lies
// between (linear). Past the last tier: nothing.
double points_for(const SpeedTest& speed, double value) {
    for (std::size_t i = 0; i < speed.tiers.size(); ++i) {
        const SpeedTier& tier = speed.tiers[i];
        if (!speed::reaches(speed.metric, value, tier.bound)) {
            continue;
        }
        if (speed.scale == SpeedScale::stepped || i == 0) {
            return tier.points;
        }
        const SpeedTier& better = speed.tiers[i - 1];
        const double t = (value - better.bound) / (tier.bound - better.bound);
        return better.points + t * (tier.points - better.points);
    }
    return 0.0;
}

std::string describe_bound(const SpeedTest& speed, double bound) {
    return speed.metric == SpeedMetric::ratio ? fmt::format("{:.2f}x the reference's time or faster", bound)
                                              : fmt::format("{:.0f}% of the copy bandwidth or more", 100 * bound);
}

// What NVML said of the GPU over the timed calls (gpu_conditions.hpp), as the harness measured it; unknown where the
// harness could not read NVML.
gpu_conditions::Conditions gpu_conditions_of(const nlohmann::json& m) {
    gpu_conditions::Conditions conditions;
    if (m.contains("gpu_sm_clock_mhz") && m.contains("gpu_clock_event_reasons")) {
        conditions.add(m.value("gpu_sm_clock_mhz", 0u), m.value("gpu_temperature_c", 0u),
                       m.value("gpu_clock_event_reasons", std::uint64_t{0}));
    }
    conditions.remeasured = m.value("throttled_remeasured", false);
    return conditions;
}

void score_speed(ScoredCase& scored, const SpeedTest& speed) {
    auto& m = scored.measurements;
    const double submission_ms = m.value("submission_ms", 0.0);
    const double reference_ms = m.value("reference_ms", 0.0);
    const double bytes = m.value("bytes", 0.0);
    const double copy_gbps = m.value("copy_gbps", 0.0);
    if (!(submission_ms > 0.0) || !(reference_ms > 0.0) || !(copy_gbps > 0.0)) {
        scored.status = Status::harness_error;
        scored.detail = "the harness reported no timing for the speed test";
        return;
    }
    const speed::Figures figures = speed::figures(submission_ms, reference_ms, bytes, copy_gbps);
    const double ratio = figures.ratio, gb_per_s = figures.gb_per_s, fraction = figures.copy_fraction;
    m["ratio"] = ratio;
    m["gb_per_s"] = gb_per_s;
    m["copy_fraction"] = fraction;
    const std::string measured = fmt::format(
        "{:.2f}x the reference's time: {:.3f} ms vs {:.3f} ms (+-{:.1f}%); {:.0f} GB/s, {:.0f}% of the copy bandwidth; "
        "median of {}",
        ratio, submission_ms, reference_ms, 100.0 * m.value("submission_rse", 0.0), gb_per_s, 100.0 * fraction,
        m.value("samples", 0));

    // Moving the bytes takes at least bytes / copy bandwidth; much less than that is a broken measurement.
    if (fraction > 1.0 + physical_floor_margin) {
        scored.status = Status::invalid_measurement;
        scored.detail = fmt::format("{:.3f} ms is faster than moving {:.0f} MB at the measured copy bandwidth "
                                    "({:.0f} GB/s) allows: the measurement cannot be trusted and earns nothing",
                                    submission_ms, bytes / 1e6, copy_gbps);
        return;
    }
    const double value = speed::metric_value(speed.metric, figures);
    scored.points = points_for(speed, value);
    scored.status = scored.points >= speed.max_points() ? Status::passed : Status::slow;
    std::string detail = measured;
    if (const std::string gpu = gpu_conditions::detail(gpu_conditions_of(m)); !gpu.empty()) {
        detail += "; " + gpu;
    }
    if (scored.status == Status::slow) {
        // Say what the next step up needs, so the student knows how far there is to go.
        const SpeedTier* next = &speed.tiers.front();
        for (const auto& tier : speed.tiers) {
            if (tier.points > scored.points) {
                next = &tier;
            }
        }
        detail += fmt::format("; {} earns {}", describe_bound(speed, next->bound), format_points(next->points));
    }
    scored.detail = detail;
}

// The reason of the first rejected visible case. A hidden case's reason is never copied: its text may come from the
// submission's own process (a refused call's name, a kernel's name in its recorded work), which could spell out the
// hidden case's size or input in it; the others say only that a hidden case broke a rule.
std::optional<std::string> rejection_reason(const std::vector<ScoredCase>& cases) {
    bool hidden_rejected = false;
    for (const auto& c : cases) {
        if (c.status == Status::rejected && c.plan.visibility != Visibility::hidden) {
            return c.detail;
        }
        hidden_rejected = hidden_rejected || c.status == Status::rejected;
    }
    if (!hidden_rejected) {
        return std::nullopt;
    }
    return std::string(rejected_in_a_hidden_case);
}

}  // namespace

void keep_nothing_after_rejection(std::vector<ScoredCase>& cases) {
    const std::optional<std::string> reason = rejection_reason(cases);
    if (!reason) {
        return;
    }
    for (auto& c : cases) {
        if (c.status == Status::rejected) {
            continue;
        }
        c.status = Status::rejected;
        c.detail = *reason;
        c.points = 0.0;
        c.measurements = nlohmann::json::object();
        c.diagnosis = std::nullopt;
    }
}

double round_points(double points) { return std::round(points * 1e6) / 1e6; }

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
    ScoredCase scored{plan, result.status, result.detail, result.measurements, 0.0, result.diagnosis};
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
