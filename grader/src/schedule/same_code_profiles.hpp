// The counters a batch read on its slow speed tests, kept by the code they were read on (same_code.hpp): a submission
// whose code was profiled already has its speed test timed as its own, and diagnosed from the counters read before
// with its own timings, without reading them again while the GPU is held alone from every other submission. One table
// for each GPU of a batch (counters differ from one GPU to another); a batch of distinct code shares nothing.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

namespace cugrade {

class SameCodeProfiles {
public:
    // The counters kept for case `case_id` of `code` (the exercise's, with its rubric: RunOptions::same_code).
    std::optional<nlohmann::json> find(const std::string& code, const std::string& case_id) const;
    // Keeps `profile` (a checker's "kernel_profile" with its launches); the first kept for a case stays.
    void keep(const std::string& code, const std::string& case_id, const nlohmann::json& profile);

private:
    mutable std::mutex mutex_;
    // By the code's whole text, not a hash of it: a file made to collide with another's cannot take its counters.
    std::map<std::pair<std::string, std::string>, nlohmann::json> profiles_;
};

}  // namespace cugrade
