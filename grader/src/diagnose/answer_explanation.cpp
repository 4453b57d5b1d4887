#include "diagnose/answer_explanation.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace cugrade {
namespace {

constexpr std::size_t max_text = 400;
constexpr std::size_t max_evidence = 6;
constexpr std::size_t max_map_lines = 24;
constexpr std::size_t max_map_width = 80;

std::string text_field(const nlohmann::json& object, const char* key, std::size_t limit = max_text) {
    const auto found = object.find(key);
    if (found == object.end() || !found->is_string()) {
        return "";
    }
    std::string text = found->get<std::string>();
    if (text.size() > limit) {
        text = text.substr(0, limit) + "...";
    }
    return text;
}

std::vector<std::string> lines_field(const nlohmann::json& object, const char* key, std::size_t count,
                                     std::size_t width) {
    std::vector<std::string> lines;
    const auto found = object.find(key);
    if (found == object.end() || !found->is_array()) {
        return lines;
    }
    for (const auto& line : *found) {
        if (lines.size() == count) {
            break;
        }
        if (line.is_string()) {
            std::string text = line.get<std::string>();
            lines.push_back(text.size() > width ? text.substr(0, width) : text);
        }
    }
    return lines;
}

}  // namespace

std::optional<Diagnosis> answer_diagnosis(const nlohmann::json& record) {
    const auto found = record.find("explanation");
    if (found == record.end() || !found->is_object()) {
        return std::nullopt;
    }
    const nlohmann::json& explanation = *found;
    Diagnosis diagnosis;
    diagnosis.kind = "answer";
    diagnosis.summary = text_field(explanation, "summary");
    if (diagnosis.summary.empty()) {
        return std::nullopt;
    }
    diagnosis.scope = "this case";
    diagnosis.evidence = lines_field(explanation, "evidence", max_evidence, max_text);
    diagnosis.hint = text_field(explanation, "hint");
    diagnosis.category = text_field(explanation, "category");
    diagnosis.topic = text_field(explanation, "topic");
    if (std::none_of(diagnosis_topics.begin(), diagnosis_topics.end(),
                     [&](const auto& topic) { return topic.first == diagnosis.topic; })) {
        diagnosis.topic.clear();
    }
    diagnosis.map = lines_field(explanation, "map", max_map_lines, max_map_width);
    return diagnosis;
}

}  // namespace cugrade
