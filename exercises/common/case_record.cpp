#include "case_record.hpp"

#include <nlohmann/json.hpp>
#include <variant>

namespace cugrade::harness {

namespace {

nlohmann::json measurement_json(const Measurement& measurement) {
    return std::visit([](auto value) { return nlohmann::json(value); }, measurement.value());
}

nlohmann::json kernel_profile_json(const KernelProfile& profile) {
    if (profile.unwanted) {
        return {{"unwanted", true}};
    }
    if (!profile.problem.empty()) {
        nlohmann::json none = {{"problem", profile.problem}};
        if (profile.turn_refused) {
            none["turn_refused"] = true;
        }
        if (profile.after_calls) {
            none["after_calls"] = true;
        }
        return none;
    }
    nlohmann::json launches = nlohmann::json::array();
    for (const ProfiledLaunch& launch : profile.launches) {
        launches.push_back({{"name", launch.name}, {"metrics", launch.metrics}});
    }
    return {{"launches", std::move(launches)},
            {"passes", profile.passes},
            {"setup_seconds", profile.setup_seconds},
            {"seconds", profile.seconds},
            {"steps", profile.steps}};
}

nlohmann::json explanation_json(const Explanation& explanation) {
    return {{"summary", explanation.summary}, {"category", explanation.category}, {"hint", explanation.hint},
            {"topic", explanation.topic},     {"evidence", explanation.evidence}, {"map", explanation.map}};
}

}  // namespace

nlohmann::json result_record(const std::string& case_id, const CaseOutcome& outcome) {
    nlohmann::json measurements = nlohmann::json::object();
    for (const auto& [name, value] : outcome.measurements.entries()) {
        measurements[name] = measurement_json(value);
    }
    if (outcome.kernel_profile) {
        measurements["kernel_profile"] = kernel_profile_json(*outcome.kernel_profile);
    }
    nlohmann::json result = {{"event", "result"},
                             {"case", case_id},
                             {"status", outcome.status},
                             {"detail", outcome.detail},
                             {"measurements", std::move(measurements)}};
    if (outcome.explanation) {
        result["explanation"] = explanation_json(*outcome.explanation);
    }
    return result;
}

}  // namespace cugrade::harness
