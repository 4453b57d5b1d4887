// Reading YAML with errors that point at the offending place: FILE:LINE:COLUMN: MESSAGE.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace cugrade::yaml {

// Loads a YAML file; a syntax error becomes a FileError at its place.
YAML::Node load_file(const std::filesystem::path& path);

SourceLocation location(const std::filesystem::path& file, const YAML::Node& node);

// One mapping of a YAML file. The constructor rejects keys outside `allowed` first, with the closest allowed key as
// a suggestion, so a misspelt key is reported as such rather than as a missing one.
class Mapping {
public:
    Mapping(const std::filesystem::path& file, const YAML::Node& node, std::string what,
            std::initializer_list<const char*> allowed);

    YAML::Node required(const std::string& key) const;
    std::optional<YAML::Node> optional(const std::string& key) const;

    [[noreturn]] void fail(const YAML::Node& at, const std::string& message) const;
    const std::filesystem::path& file() const { return file_; }

    // Typed readers: each reports the value's own place when it is out of range or of the wrong type.
    std::string text(const YAML::Node& node, const std::string& key) const;
    std::string choice(const YAML::Node& node, const std::string& key,
                       std::initializer_list<const char*> choices) const;
    std::int64_t integer(const YAML::Node& node, const std::string& key, std::int64_t min, std::int64_t max) const;
    double number(const YAML::Node& node, const std::string& key, double min, double max) const;
    std::vector<YAML::Node> sequence(const YAML::Node& node, const std::string& key) const;
    // An exercise parameter's value: a number, or true and false as 1 and 0.
    double parameter(const YAML::Node& node, const std::string& name) const;

private:
    std::filesystem::path file_;
    YAML::Node node_;
    std::string what_;
};

// "did you mean 'points'?" for a misspelt key, or an empty string when nothing is close.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace cugrade::yaml
