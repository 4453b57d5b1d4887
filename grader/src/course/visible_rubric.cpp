#include "course/visible_rubric.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "base/yaml_fields.hpp"

namespace cugrade {
namespace {

bool hidden(const YAML::Node& node) {
    return node.IsMap() && node["visibility"] && node["visibility"].IsScalar() &&
           node["visibility"].Scalar() == "hidden";
}

// Short lists (sizes, shapes, tiers) on one line each, as the course's rubrics write them.
void compact(YAML::Node node) {
    if (node.IsSequence()) {
        bool plain = true;
        for (const auto& item : node) {
            plain = plain && (item.IsScalar() || (item.IsSequence() && item.size() <= 4));
        }
        if (plain) {
            node.SetStyle(YAML::EmitterStyle::Flow);
        }
    }
    if (node.IsMap() && node.size() <= 4) {
        bool scalars = true;
        for (const auto& item : node) {
            scalars = scalars && item.second.IsScalar();
        }
        if (scalars) {
            node.SetStyle(YAML::EmitterStyle::Flow);
        }
    }
    if (node.IsSequence() || node.IsMap()) {
        for (auto item : node) {
            compact(node.IsMap() ? item.second : item);
        }
    }
}

}  // namespace

std::string visible_rubric_text(const std::filesystem::path& rubric_file) {
    const YAML::Node rubric = yaml::load_file(rubric_file);
    YAML::Node visible(YAML::NodeType::Map);
    std::set<std::string> inputs_used;
    const auto use_inputs = [&](const YAML::Node& node, const char* key) {
        if (!node[key]) {
            return;
        }
        if (node[key].IsScalar()) {
            inputs_used.insert(node[key].Scalar());
        }
        if (node[key].IsSequence()) {
            for (const auto& name : node[key]) {
                inputs_used.insert(name.Scalar());
            }
        }
    };
    for (const auto& field : rubric) {
        const std::string key = field.first.Scalar();
        if (key == "groups") {
            YAML::Node groups(YAML::NodeType::Sequence);
            for (const auto& group : field.second) {
                if (!hidden(group)) {
                    groups.push_back(group);
                    use_inputs(group, "inputs");
                }
            }
            visible[key] = groups;
        } else if (key == "speed") {
            if (!hidden(field.second)) {
                visible[key] = field.second;
                use_inputs(field.second, "input");
            }
        } else if (key != "inputs") {
            visible[key] = field.second;
        }
    }
    if (rubric["inputs"] && rubric["inputs"].IsMap()) {
        YAML::Node inputs(YAML::NodeType::Map);
        for (const auto& input : rubric["inputs"]) {
            if (inputs_used.count(input.first.Scalar()) != 0) {
                inputs[input.first] = input.second;
            }
        }
        visible["inputs"] = inputs;
    }
    compact(visible);
    YAML::Emitter out;
    out << visible;
    return fmt::format(
        "# The visible part of the rubric for {}, as `cugrade handout` wrote it: the final grade also has\n"
        "# hidden cases, which are not in this kit.\n{}\n",
        rubric_file.stem().string(), out.c_str());
}

}  // namespace cugrade
