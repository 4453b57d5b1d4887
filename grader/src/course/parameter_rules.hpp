// An exercise's parameters as it declares them in exercise.yaml (type, default, range, a relation to another), and the
// one check of a value against its declaration that the exercise's defaults, a rubric and `cugrade bench` all pass
// through (docs/authoring.md, docs/rubric.md).
#pragma once

#include <map>
#include <string>

#include "course/rubric.hpp"
#include "base/yaml_fields.hpp"

namespace cugrade {

// exercise.yaml's `parameters:`: every declaration read and checked, its default against it, and the defaults'
// relations. Throws FileError at the mistake.
std::map<std::string, ParameterRule> read_parameter_rules(const yaml::Mapping& fields, const YAML::Node& node);

// What is wrong with `value` as parameter `name`, as a sentence to act on ("'k' must be an integer from 1 to 65536,
// not true"), or "" when its declaration accepts it.
std::string parameter_problem(const std::string& name, const ParameterRule& rule, const ParameterValue& value);

// What is wrong with parameter `name`'s value beside the one its `greater_than` names ("'high' must be greater than
// 'low' (300), not 7"), or "". `values` holds every parameter of the exercise.
std::string relation_problem(const std::string& name, const std::map<std::string, ParameterRule>& rules,
                             const ParameterValues& values);

// The exercise's default as a value, written as a rubric would write it.
ParameterValue default_value(const ParameterRule& rule);

// A number given on the command line (`cugrade bench --parameter k=1024`): 0 and 1 stand for false and true.
ParameterValue command_line_value(const ParameterRule& rule, double number);

}  // namespace cugrade
