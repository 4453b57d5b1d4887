#include "run/harness_records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace cugrade {

std::string make_token() {
    std::random_device random;
    std::string token;
    for (int i = 0; i < 4; ++i) {
        token += fmt::format("{:08x}", random());
    }
    return token;
}

GpuGate::Use requested_use(const nlohmann::json& record) {
    const std::string use = record.value("use", "");
    return use == "shared" ? GpuGate::Use::shared : use == "exclusive" ? GpuGate::Use::exclusive : GpuGate::Use::none;
}

void add_protections(std::vector<std::string>& kept, const std::vector<std::string>& said) {
    for (const std::string& protection : said) {
        if (std::find(kept.begin(), kept.end(), protection) == kept.end()) {
            kept.push_back(protection);
        }
    }
}

std::vector<std::string> protections_of(const nlohmann::json& record) {
    std::vector<std::string> said;
    if (record.contains("protections") && record["protections"].is_array()) {
        for (const auto& protection : record["protections"]) {
            if (protection.is_string()) {
                said.push_back(protection.get<std::string>());
            }
        }
    }
    return said;
}

}  // namespace cugrade
