// Reading exercise.yaml's `rules` (cugrade/contract_rules.hpp) with errors at their place.
#pragma once

#include "course/contract_rules.hpp"
#include "base/yaml_fields.hpp"

namespace cugrade {

// `node` is the value of `rules`; `fields` the exercise.yaml mapping it belongs to. Throws FileError at the offending
// place: an unknown class or library, a rule without the contract's words.
ContractRules read_contract_rules(const yaml::Mapping& fields, const YAML::Node& node);

}  // namespace cugrade
