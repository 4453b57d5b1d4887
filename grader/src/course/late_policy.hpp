// A course's late policy, the `late` section of course.yaml (course_file.hpp, docs/batch.md):
//   late:
//     due: 2026-03-01T23:59:00-05:00   # ISO 8601 with a time zone
//     grace_minutes: 15                # submissions this late count as on time
//     penalty_per_day: 10              # percent of the points earned, per day or part of a day past the grace
//     max_penalty: 50                  # percent, at most
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace cugrade {

struct LatePolicy {
    std::int64_t due = 0;  // seconds since the epoch
    std::int64_t grace_seconds = 0;
    double penalty_per_day = 0.0;  // percent
    double max_penalty = 100.0;    // percent
};

struct Lateness {
    int days = 0;                   // days late, each part of a day counting as one
    double penalty_fraction = 0.0;  // of the points earned
};

// The policy of course.yaml's `late` section. Throws FileError at the offending place.
LatePolicy read_late_policy(const std::filesystem::path& course_file, const YAML::Node& node);

// Seconds since the epoch of "2026-03-01T23:59:00-05:00", "...Z", "... .123456", or Gradescope's
// "2026-03-01 23:59:00.123456 -0500"; nothing for a time without a zone or not a time.
std::optional<std::int64_t> parse_time(const std::string& text);

// How late `submitted_at` is under `policy`; on time when the time is unknown or unreadable.
Lateness lateness(const LatePolicy& policy, const std::optional<std::string>& submitted_at);

}  // namespace cugrade
