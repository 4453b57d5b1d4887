#include "base/yaml_fields.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cugrade {

std::string format_location(const SourceLocation& where) {
    return fmt::format("{}:{}:{}", where.file.string(), where.line, where.column);
}

}  // namespace cugrade

namespace cugrade::yaml {
namespace {

std::string describe(const YAML::Node& node) {
    if (node.IsScalar()) {
        return fmt::format("'{}'", node.Scalar());
    }
    if (node.IsSequence()) {
        return "a list";
    }
    if (node.IsMap()) {
        return "a mapping";
    }
    return "nothing";
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// yaml-cpp keeps every entry of a mapping, and a lookup finds the first: a key written twice would silently ignore
// the second value. Every mapping of the document is checked, wherever it lies.
void reject_duplicate_keys(const std::filesystem::path& file, const YAML::Node& node) {
    if (node.IsSequence()) {
        for (const auto& item : node) {
            reject_duplicate_keys(file, item);
        }
        return;
    }
    if (!node.IsMap()) {
        return;
    }
    std::vector<YAML::Node> keys;
    for (const auto& entry : node) {
        if (entry.first.IsScalar()) {
            for (const auto& earlier : keys) {
                if (earlier.Scalar() == entry.first.Scalar()) {
                    throw FileError(location(file, entry.first),
                                    fmt::format("key '{}' appears twice in this mapping (first at line {}): keep one",
                                                entry.first.Scalar(), location(file, earlier).line));
                }
            }
            keys.push_back(entry.first);
        }
        reject_duplicate_keys(file, entry.second);
    }
}

}  // namespace

YAML::Node load_file(const std::filesystem::path& path) {
    if (!std::filesystem::is_regular_file(path)) {
        throw UsageError(fmt::format("cannot read '{}': no such file", path.string()));
    }
    try {
        YAML::Node document = YAML::LoadFile(path.string());
        reject_duplicate_keys(path, document);
        return document;
    } catch (const YAML::ParserException& e) {
        throw FileError({path, e.mark.line + 1, e.mark.column + 1}, fmt::format("invalid yaml: {}", e.msg));
    } catch (const YAML::BadFile&) {
        throw UsageError(fmt::format("cannot read '{}'", path.string()));
    }
}

SourceLocation location(const std::filesystem::path& file, const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    if (mark.is_null()) {
        return {file, 1, 1};
    }
    return {file, mark.line + 1, mark.column + 1};
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_distance = std::numeric_limits<std::size_t>::max();
    for (const auto& candidate : candidates) {
        const std::size_t d = edit_distance(word, candidate);
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best_distance <= std::max<std::size_t>(2, word.size() / 3) ? best : "";
}

Mapping::Mapping(const std::filesystem::path& file, const YAML::Node& node, std::string what,
                 std::initializer_list<const char*> allowed)
    : file_(file), node_(node), what_(std::move(what)) {
    if (!node.IsMap()) {
        fail(node, fmt::format("{} must be a mapping of keys to values, got {}", what_, describe(node)));
    }
    const std::vector<std::string> known(allowed.begin(), allowed.end());
    for (const auto& entry : node_) {
        const std::string key = entry.first.Scalar();
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            const std::string suggestion = closest(key, known);
            fail(entry.first, suggestion.empty()
                                  ? fmt::format("unknown key '{}' in {}", key, what_)
                                  : fmt::format("unknown key '{}' in {} (did you mean '{}'?)", key, what_, suggestion));
        }
    }
}

void Mapping::fail(const YAML::Node& at, const std::string& message) const {
    throw FileError(location(file_, at), message);
}

YAML::Node Mapping::required(const std::string& key) const {
    if (auto value = optional(key)) {
        return *value;
    }
    fail(node_, fmt::format("{} is missing the required key '{}'", what_, key));
}

std::optional<YAML::Node> Mapping::optional(const std::string& key) const {
    const YAML::Node value = node_[key];
    if (!value.IsDefined() || value.IsNull()) {
        return std::nullopt;
    }
    return value;
}

std::string Mapping::text(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar() || node.Scalar().empty()) {
        fail(node, fmt::format("'{}' must be text, got {}", key, describe(node)));
    }
    return node.Scalar();
}

std::string Mapping::choice(const YAML::Node& node, const std::string& key,
                            std::initializer_list<const char*> choices) const {
    const std::string value = text(node, key);
    for (const char* c : choices) {
        if (value == c) {
            return value;
        }
    }
    fail(node, fmt::format("'{}' must be one of {}, got '{}'", key, fmt::join(choices, ", "), value));
}

std::int64_t Mapping::integer(const YAML::Node& node, const std::string& key, std::int64_t min,
                              std::int64_t max) const {
    std::int64_t value = 0;
    const bool ok = node.IsScalar() && YAML::convert<std::int64_t>::decode(node, value);
    if (!ok || value < min || value > max) {
        fail(node, fmt::format("'{}' must be a whole number from {} to {}, got {}", key, min, max, describe(node)));
    }
    return value;
}

double Mapping::number(const YAML::Node& node, const std::string& key, double min, double max) const {
    double value = 0.0;
    const bool ok = node.IsScalar() && YAML::convert<double>::decode(node, value) && std::isfinite(value);
    if (!ok || value < min || value > max) {
        fail(node, fmt::format("'{}' must be a number from {} to {}, got {}", key, min, max, describe(node)));
    }
    return value;
}

std::vector<YAML::Node> Mapping::sequence(const YAML::Node& node, const std::string& key) const {
    if (!node.IsSequence() || node.size() == 0) {
        fail(node, fmt::format("'{}' must be a non-empty list, got {}", key, describe(node)));
    }
    return {node.begin(), node.end()};
}

double Mapping::parameter(const YAML::Node& node, const std::string& name) const {
    const std::string text = node.IsScalar() ? node.Scalar() : "";
    double value = 0.0;
    if (text == "true" || text == "false") {
        return text == "true" ? 1.0 : 0.0;
    }
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !std::isfinite(value)) {
        fail(node, fmt::format("parameter '{}' must be a number, true or false, got {}", name, describe(node)));
    }
    return value;
}

}  // namespace cugrade::yaml
