#include "course/parameter_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cfloat>
#include <cmath>
#include <optional>
#include <vector>

namespace cugrade {
namespace {

bool is_boolean(const ParameterValue& value) { return value.written == "true" || value.written == "false"; }

// "an integer from 1 to 4096", "a float32 number of at least 0", "an integer".
std::string expected_value(const ParameterRule& rule) {
    const char* kind = rule.type == ParameterType::integer ? "an integer" : "a float32 number";
    if (rule.min && rule.max) {
        return fmt::format("{} from {} to {}", kind, *rule.min, *rule.max);
    }
    if (rule.min) {
        return fmt::format("{} of at least {}", kind, *rule.min);
    }
    if (rule.max) {
        return fmt::format("{} of at most {}", kind, *rule.max);
    }
    return kind;
}

bool within_bounds(const ParameterRule& rule, double number) {
    return (!rule.min || number >= *rule.min) && (!rule.max || number <= *rule.max);
}

// The refusal that states what the parameter takes, with the declaration's reason for its range.
std::string outside_rule(const std::string& name, const ParameterRule& rule, const ParameterValue& value) {
    const std::string message = fmt::format("'{}' must be {}, not {}", name, expected_value(rule), value.written);
    return rule.reason.empty() ? message : fmt::format("{} ({})", message, rule.reason);
}

// The harness converts the value to float: beyond FLT_MAX the conversion is undefined, and below FLT_MIN a value is
// subnormal, which a kernel compiled to flush subnormals reads as 0.
std::string float32_problem(const std::string& name, const ParameterRule& rule, const ParameterValue& value) {
    const double magnitude = std::fabs(value.number);
    if (!is_boolean(value) && magnitude > FLT_MAX) {
        return fmt::format("'{}' is {}, outside float32's finite range (about -3.4e38 to 3.4e38)", name, value.written);
    }
    if (!is_boolean(value) && magnitude != 0.0 && magnitude < FLT_MIN) {
        return fmt::format("'{}' is {}, nearer 0 than float32's smallest normal number (about 1.2e-38): give 0 or a "
                           "larger magnitude",
                           name, value.written);
    }
    return is_boolean(value) || !within_bounds(rule, value.number) ? outside_rule(name, rule, value) : "";
}

std::string written_as(const ParameterRule& rule, double number) {
    if (rule.type == ParameterType::boolean && (number == 0.0 || number == 1.0)) {
        return number == 1.0 ? "true" : "false";
    }
    return fmt::format("{}", number);
}

// A declaration as read; its relation is checked once every declaration is, since it names another.
struct Declaration {
    ParameterRule rule;
    YAML::Node default_node;
    YAML::Node greater_than_node;
};

ParameterValue value_at(const yaml::Mapping& fields, const YAML::Node& node, const std::string& name) {
    return {fields.parameter(node, name), node.Scalar(), yaml::location(fields.file(), node)};
}

// `min` or `max`: a value of the parameter's own type.
double read_bound(const yaml::Mapping& fields, const YAML::Node& node, const char* key, ParameterType type) {
    const ParameterValue bound = value_at(fields, node, key);
    ParameterRule unbounded;
    unbounded.type = type;
    if (const std::string problem = parameter_problem(key, unbounded, bound); !problem.empty()) {
        fields.fail(node, problem);
    }
    return bound.number;
}

void read_range(const yaml::Mapping& fields, const std::string& name, ParameterRule& rule) {
    for (const char* key : {"min", "max", "greater_than"}) {
        if (const auto given = fields.optional(key); given && rule.type == ParameterType::boolean) {
            fields.fail(*given,
                        fmt::format("'{}' is for integer and float32 parameters; '{}' is a boolean", key, name));
        }
    }
    if (const auto min = fields.optional("min")) {
        rule.min = read_bound(fields, *min, "min", rule.type);
    }
    if (const auto max = fields.optional("max")) {
        rule.max = read_bound(fields, *max, "max", rule.type);
        if (rule.min && *rule.max < *rule.min) {
            fields.fail(*max, fmt::format("'max' must be at least 'min' ({}), not {}", *rule.min, max->Scalar()));
        }
    }
}

Declaration read_declaration(const yaml::Mapping& parameters, const std::string& name, const YAML::Node& node) {
    if (node.IsScalar()) {
        parameters.fail(node, fmt::format("parameter '{}' must be declared as {{type: integer | float32 | boolean, "
                                          "default: VALUE}}, not {}",
                                          name, node.Scalar()));
    }
    const yaml::Mapping fields(parameters.file(), node, fmt::format("parameter '{}'", name),
                               {"type", "default", "min", "max", "greater_than", "reason"});
    Declaration declaration;
    ParameterRule& rule = declaration.rule;
    const std::string type = fields.choice(fields.required("type"), "type", {"integer", "float32", "boolean"});
    rule.type = type == "integer"   ? ParameterType::integer
                : type == "float32" ? ParameterType::float32
                                    : ParameterType::boolean;
    read_range(fields, name, rule);
    if (const auto other = fields.optional("greater_than")) {
        rule.greater_than = fields.text(*other, "greater_than");
        declaration.greater_than_node = *other;
    }
    if (const auto reason = fields.optional("reason")) {
        rule.reason = fields.text(*reason, "reason");
    }
    declaration.default_node = fields.required("default");
    const ParameterValue value = value_at(fields, declaration.default_node, name);
    if (const std::string problem = parameter_problem(name, rule, value); !problem.empty()) {
        fields.fail(declaration.default_node, problem);
    }
    rule.default_value = value.number;
    return declaration;
}

// Each `greater_than` names another parameter, of numbers, and the defaults keep to it.
void check_relations(const yaml::Mapping& fields, const std::map<std::string, Declaration>& declarations,
                     const std::map<std::string, ParameterRule>& rules) {
    ParameterValues defaults;
    for (const auto& [name, rule] : rules) {
        defaults[name] = default_value(rule);
    }
    for (const auto& [name, declaration] : declarations) {
        const std::string& other = declaration.rule.greater_than;
        if (other.empty()) {
            continue;
        }
        std::vector<std::string> others;
        for (const auto& [known, rule] : rules) {
            if (known != name) {
                others.push_back(known);
            }
        }
        if (other == name || rules.count(other) == 0) {
            fields.fail(declaration.greater_than_node,
                        fmt::format("'greater_than' must name another parameter of this exercise, not '{}' (the "
                                    "others: {})",
                                    other, others.empty() ? "none" : fmt::format("{}", fmt::join(others, ", "))));
        }
        if (rules.at(other).type == ParameterType::boolean) {
            fields.fail(declaration.greater_than_node,
                        fmt::format("'greater_than' compares numbers; '{}' is a boolean", other));
        }
        if (const std::string problem = relation_problem(name, rules, defaults); !problem.empty()) {
            fields.fail(declaration.default_node, problem);
        }
    }
}

}  // namespace

std::string parameter_problem(const std::string& name, const ParameterRule& rule, const ParameterValue& value) {
    switch (rule.type) {
        case ParameterType::boolean:
            return is_boolean(value) ? "" : fmt::format("'{}' must be true or false, not {}", name, value.written);
        case ParameterType::integer:
            return !is_boolean(value) && std::floor(value.number) == value.number && within_bounds(rule, value.number)
                       ? ""
                       : outside_rule(name, rule, value);
        case ParameterType::float32: return float32_problem(name, rule, value);
    }
    return "";
}

std::string relation_problem(const std::string& name, const std::map<std::string, ParameterRule>& rules,
                             const ParameterValues& values) {
    const ParameterRule& rule = rules.at(name);
    const auto other_rule = rules.find(rule.greater_than);
    const auto value = values.find(name);
    const auto other = values.find(rule.greater_than);
    if (other_rule == rules.end() || value == values.end() || other == values.end()) {
        return "";
    }
    const double number = value->second.number, bound = other->second.number;
    // Two float32 parameters reach the harness as floats: distinct numbers can round to one float.
    const bool as_float32 = rule.type == ParameterType::float32 && other_rule->second.type == ParameterType::float32;
    if (as_float32 && static_cast<float>(number) > static_cast<float>(bound)) {
        // The harness divides the range: a width that overflows float32 makes every bin infinite.
        const float width = static_cast<float>(number) - static_cast<float>(bound);
        return std::isfinite(width)
                   ? ""
                   : fmt::format("'{}' - '{}' is {} - {}, beyond float32's finite range (about "
                                 "3.4e38): narrow the range",
                                 name, rule.greater_than, value->second.written, other->second.written);
    }
    if (!as_float32 && number > bound) {
        return "";
    }
    return fmt::format("'{}' must be greater than '{}' ({}), not {}{}", name, rule.greater_than, other->second.written,
                       value->second.written, number > bound ? ", the same float32" : "");
}

ParameterValue default_value(const ParameterRule& rule) {
    return {rule.default_value, written_as(rule, rule.default_value), std::nullopt};
}

ParameterValue command_line_value(const ParameterRule& rule, double number) {
    return {number, written_as(rule, number), std::nullopt};
}

std::map<std::string, ParameterRule> read_parameter_rules(const yaml::Mapping& fields, const YAML::Node& node) {
    if (!node.IsMap()) {
        fields.fail(node, "'parameters' maps each parameter a rubric may set to its declaration, {type: integer | "
                          "float32 | boolean, default: VALUE}");
    }
    std::map<std::string, Declaration> declarations;
    std::map<std::string, ParameterRule> rules;
    for (const auto& entry : node) {
        const std::string name = fields.text(entry.first, "parameters");
        declarations[name] = read_declaration(fields, name, entry.second);
        rules[name] = declarations[name].rule;
    }
    check_relations(fields, declarations, rules);
    return rules;
}

}  // namespace cugrade
