// The course's late policy (late_policy.hpp).
#include "course/late_policy.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <regex>

#include "base/yaml_fields.hpp"

namespace cugrade {

std::optional<std::int64_t> parse_time(const std::string& text) {
    static const std::regex time(
        R"(^\s*(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?\s*(Z|[+-]\d{2}:?\d{2})\s*$)");
    std::smatch m;
    if (!std::regex_match(text, m, time)) {
        return std::nullopt;
    }
    std::tm parts{};
    parts.tm_year = std::stoi(m[1]) - 1900;
    parts.tm_mon = std::stoi(m[2]) - 1;
    parts.tm_mday = std::stoi(m[3]);
    parts.tm_hour = std::stoi(m[4]);
    parts.tm_min = std::stoi(m[5]);
    parts.tm_sec = std::stoi(m[6]);
    if (parts.tm_mon > 11 || parts.tm_mday < 1 || parts.tm_mday > 31 || parts.tm_hour > 23 || parts.tm_min > 59 ||
        parts.tm_sec > 60) {
        return std::nullopt;
    }
    std::int64_t seconds = ::timegm(&parts);
    const std::string zone = m[7];
    if (zone != "Z") {
        const std::string digits = zone.substr(1, 2) + zone.substr(zone.size() - 2);
        const int offset = std::stoi(digits.substr(0, 2)) * 3600 + std::stoi(digits.substr(2)) * 60;
        seconds -= zone[0] == '+' ? offset : -offset;
    }
    return seconds;
}

LatePolicy read_late_policy(const std::filesystem::path& course_file, const YAML::Node& node) {
    const yaml::Mapping late(course_file, node, "late", {"due", "grace_minutes", "penalty_per_day", "max_penalty"});
    LatePolicy policy;
    const YAML::Node due = late.required("due");
    const auto when = parse_time(late.text(due, "due"));
    if (!when) {
        late.fail(due, "due must be a time with its zone, such as 2026-03-01T23:59:00-05:00");
    }
    policy.due = *when;
    if (const auto grace = late.optional("grace_minutes")) {
        policy.grace_seconds = late.integer(*grace, "grace_minutes", 0, 60 * 24 * 365) * 60;
    }
    policy.penalty_per_day = late.number(late.required("penalty_per_day"), "penalty_per_day", 0.0, 100.0);
    if (const auto cap = late.optional("max_penalty")) {
        policy.max_penalty = late.number(*cap, "max_penalty", 0.0, 100.0);
    }
    return policy;
}

Lateness lateness(const LatePolicy& policy, const std::optional<std::string>& submitted_at) {
    const auto when = submitted_at ? parse_time(*submitted_at) : std::nullopt;
    if (!when || *when <= policy.due + policy.grace_seconds) {
        return {};
    }
    const std::int64_t late_seconds = *when - policy.due;
    Lateness result;
    result.days = static_cast<int>((late_seconds + 86399) / 86400);
    result.penalty_fraction = std::min(policy.max_penalty, policy.penalty_per_day * result.days) / 100.0;
    return result;
}

}  // namespace cugrade
