#include "course/contract_rules_yaml.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "course/api_policy.hpp"

namespace cugrade {
namespace {

struct ArithmeticName {
    ArithmeticClass arithmetic;
    const char* key;
    const char* description;
};

const std::vector<ArithmeticName>& arithmetic_names() {
    static const std::vector<ArithmeticName> all = {
        {ArithmeticClass::fp64, "fp64", "double-precision arithmetic"},
        {ArithmeticClass::float_mma, "float_mma", "tensor-core matrix multiply-accumulate on TF32, FP16 or BF16"},
        {ArithmeticClass::integer_mma, "integer_mma", "tensor-core matrix multiply-accumulate on integers"},
        {ArithmeticClass::packed_half, "packed_half", "half or bfloat16 arithmetic"},
    };
    return all;
}

const ArithmeticName& name_of(ArithmeticClass arithmetic) {
    const auto& all = arithmetic_names();
    return *std::find_if(all.begin(), all.end(), [&](const ArithmeticName& n) { return n.arithmetic == arithmetic; });
}

std::string words(const yaml::Mapping& rule, const std::string& key) {
    const std::string text = rule.text(rule.required("words"), "words");
    if (text.empty()) {
        rule.fail(rule.required("words"), fmt::format("'{}' needs the contract's words for the rule", key));
    }
    return text;
}

std::set<ArithmeticClass> read_refused_arithmetic(const yaml::Mapping& rule) {
    std::vector<std::string> keys;
    for (const auto& name : arithmetic_names()) {
        keys.push_back(name.key);
    }
    std::set<ArithmeticClass> refused;
    for (const auto& entry : rule.sequence(rule.required("refuse"), "refuse")) {
        const std::string key = rule.text(entry, "refuse");
        const auto& all = arithmetic_names();
        const auto known = std::find_if(all.begin(), all.end(), [&](const ArithmeticName& n) { return n.key == key; });
        if (known == all.end()) {
            rule.fail(entry, fmt::format("unknown arithmetic '{}' (known: {})", key, fmt::join(keys, ", ")));
        }
        refused.insert(known->arithmetic);
    }
    return refused;
}

std::vector<std::string> read_allowed_libraries(const yaml::Mapping& rule) {
    std::vector<std::string> allowed;
    const YAML::Node list = rule.required("allow");
    if (list.IsSequence() && list.size() == 0) {
        return allowed;  // none: every known library is refused
    }
    for (const auto& entry : rule.sequence(list, "allow")) {
        const std::string library = rule.text(entry, "allow");
        const auto& known = known_libraries();
        if (std::find(known.begin(), known.end(), library) == known.end()) {
            rule.fail(entry, fmt::format("unknown library '{}' (known: {})", library, fmt::join(known, ", ")));
        }
        allowed.push_back(library);
    }
    return allowed;
}

}  // namespace

const std::vector<ArithmeticClass>& arithmetic_classes() {
    static const std::vector<ArithmeticClass> all = [] {
        std::vector<ArithmeticClass> classes;
        for (const auto& name : arithmetic_names()) {
            classes.push_back(name.arithmetic);
        }
        return classes;
    }();
    return all;
}

std::string arithmetic_key(ArithmeticClass arithmetic) { return name_of(arithmetic).key; }

std::string describe_arithmetic(ArithmeticClass arithmetic) { return name_of(arithmetic).description; }

ContractRules read_contract_rules(const yaml::Mapping& fields, const YAML::Node& node) {
    if (!node.IsMap()) {
        fields.fail(node, "'rules' maps arithmetic, libraries and host_copies to what the contract says of each");
    }
    const yaml::Mapping rules(fields.file(), node, "the contract's rules", {"arithmetic", "libraries", "host_copies"});
    ContractRules contract;
    if (auto arithmetic = rules.optional("arithmetic")) {
        const yaml::Mapping rule(fields.file(), *arithmetic, "the arithmetic rule", {"refuse", "words"});
        contract.refused_arithmetic = read_refused_arithmetic(rule);
        contract.arithmetic_words = words(rule, "arithmetic");
    }
    if (auto libraries = rules.optional("libraries")) {
        const yaml::Mapping rule(fields.file(), *libraries, "the libraries rule", {"allow", "words"});
        contract.allowed_libraries = read_allowed_libraries(rule);
        contract.libraries_words = words(rule, "libraries");
    }
    if (auto host_copies = rules.optional("host_copies")) {
        const yaml::Mapping rule(fields.file(), *host_copies, "the host copies rule", {"refuse", "words"});
        contract.host_copies_refused = rule.choice(rule.required("refuse"), "refuse", {"true", "false"}) == "true";
        contract.host_copies_words = words(rule, "host_copies");
    }
    return contract;
}

}  // namespace cugrade
