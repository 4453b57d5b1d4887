#include "base/status.hpp"

#include <array>
#include <utility>

namespace cugrade {
namespace {

constexpr std::array<std::pair<Status, const char*>, 15> names{{
    {Status::passed, "passed"},
    {Status::slow, "slow"},
    {Status::invalid_measurement, "invalid_measurement"},
    {Status::wrong_answer, "wrong_answer"},
    {Status::race, "race"},
    {Status::memory_error, "memory_error"},
    {Status::rejected, "rejected"},
    {Status::build_failed, "build_failed"},
    {Status::timed_out, "timed_out"},
    {Status::crashed, "crashed"},
    {Status::limit_exceeded, "limit_exceeded"},
    {Status::cuda_error, "cuda_error"},
    {Status::exited_early, "exited_early"},
    {Status::skipped, "skipped"},
    {Status::harness_error, "harness_error"},
}};

}  // namespace

std::string to_string(Status status) {
    for (const auto& [value, name] : names) {
        if (value == status) {
            return name;
        }
    }
    return "unknown";
}

std::optional<Status> status_from_string(const std::string& text) {
    for (const auto& [value, name] : names) {
        if (text == name) {
            return value;
        }
    }
    return std::nullopt;
}

std::string display_name(Status status) {
    std::string name = to_string(status);
    for (char& c : name) {
        c = c == '_' ? ' ' : c;
    }
    return name;
}

bool checked_answer(Status status) { return status == Status::passed || status == Status::wrong_answer; }

}  // namespace cugrade
