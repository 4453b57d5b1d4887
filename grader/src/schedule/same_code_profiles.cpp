#include "schedule/same_code_profiles.hpp"

namespace cugrade {

std::optional<nlohmann::json> SameCodeProfiles::find(const std::string& code, const std::string& case_id) const {
    const std::lock_guard lock(mutex_);
    const auto found = profiles_.find({code, case_id});
    if (found == profiles_.end()) {
        return std::nullopt;
    }
    return found->second;
}

void SameCodeProfiles::keep(const std::string& code, const std::string& case_id, const nlohmann::json& profile) {
    const std::lock_guard lock(mutex_);
    profiles_.try_emplace({code, case_id}, profile);
}

}  // namespace cugrade
