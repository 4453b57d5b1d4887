#include "course/rubric.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <random>
#include <regex>
#include <set>
#include <utility>

#include "course/api_policy.hpp"
#include "base/hash.hpp"
#include "course/parameter_rules.hpp"
#include "seed_mix.hpp"
#include "base/yaml_fields.hpp"

namespace cugrade {
namespace {

constexpr auto max_size = static_cast<std::int64_t>(max_elements);
constexpr int schema_version = 1;

Visibility read_visibility(const yaml::Mapping& fields, const std::optional<YAML::Node>& node) {
    if (!node) {
        return Visibility::visible;
    }
    return fields.choice(*node, "visibility", {"visible", "hidden"}) == "hidden" ? Visibility::hidden
                                                                                 : Visibility::visible;
}

std::string read_name(const yaml::Mapping& fields, const YAML::Node& node, const std::string& key) {
    static const std::regex pattern("[a-z0-9][a-z0-9_-]*");
    const std::string name = fields.text(node, key);
    if (!std::regex_match(name, pattern)) {
        fields.fail(node, fmt::format("'{}' must use lowercase letters, digits, '-' and '_', got '{}'", key, name));
    }
    return name;
}

std::string read_input_name(const yaml::Mapping& fields, const YAML::Node& node, const Rubric& rubric,
                            const char* key) {
    const std::string name = fields.text(node, key);
    if (rubric.inputs.count(name) == 0) {
        std::vector<std::string> known;
        for (const auto& [known_name, input] : rubric.inputs) {
            known.push_back(known_name);
        }
        fields.fail(node, fmt::format("unknown input '{}' (defined in 'inputs': {})", name, fmt::join(known, ", ")));
    }
    return name;
}

// `signed`, one distribution for every operand, or `[signed, positive]`, one per operand.
std::vector<std::string> read_input_entry(const yaml::Mapping& fields, const YAML::Node& node, const Rubric& rubric,
                                          const char* key) {
    if (!node.IsSequence()) {
        return {read_input_name(fields, node, rubric, key)};
    }
    std::vector<std::string> names;
    for (const auto& item : fields.sequence(node, key)) {
        names.push_back(read_input_name(fields, item, rubric, key));
    }
    return names;
}

// `parameters: {exclusive: true, tile: 32}`: numbers, and true and false as 1 and 0, each kept as written and where,
// for fit_rubric to check against the exercise's declaration.
ParameterValues read_parameters(const yaml::Mapping& fields, const YAML::Node& node, ParameterValues parameters) {
    if (!node.IsMap()) {
        fields.fail(node, "'parameters' must map the exercise's parameter names to numbers or true/false");
    }
    for (const auto& entry : node) {
        const std::string name = read_name(fields, entry.first, "parameters");
        parameters[name] = {fields.parameter(entry.second, name), entry.second.Scalar(),
                            yaml::location(fields.file(), entry.second)};
    }
    return parameters;
}

// What the harness gets of the parameters: their numbers.
std::map<std::string, double> numbers_of(const ParameterValues& parameters) {
    std::map<std::string, double> numbers;
    for (const auto& [name, value] : parameters) {
        numbers[name] = value.number;
    }
    return numbers;
}

SourceLocation place_of(const std::filesystem::path& file, const YAML::Node& node) {
    return {file, node.Mark().line + 1, node.Mark().column + 1};
}

InputDistribution read_input(const std::filesystem::path& file, const std::string& name, const YAML::Node& node) {
    yaml::Mapping fields(file, node, fmt::format("input '{}'", name),
                         {"kind", "low", "high", "value", "min_at", "max_at", "infinities"});
    InputDistribution input;
    input.name = name;
    input.kind =
        fields.choice(fields.required("kind"), "kind", {"uniform", "integers", "constant", "ascending", "descending"});
    if (input.kind == "constant") {
        input.value = fields.number(fields.required("value"), "value", -1e30, 1e30);
        input.low = input.high = input.value;
    } else {
        const auto low = fields.required("low");
        const auto high = fields.required("high");
        input.low = fields.number(low, "low", -1e30, 1e30);
        input.high = fields.number(high, "high", -1e30, 1e30);
        if (input.kind == "integers" &&
            (std::nearbyint(input.low) != input.low || std::nearbyint(input.high) != input.high)) {
            fields.fail(std::nearbyint(input.low) != input.low ? low : high,
                        "'low' and 'high' of an integers input must be whole numbers");
        }
        // The harness draws float32 values between the two as floats: distinct numbers can round to one float.
        if (input.kind == "integers" ? !(input.low <= input.high)
                                     : !(static_cast<float>(input.low) < static_cast<float>(input.high))) {
            fields.fail(high, input.high > input.low && input.kind != "integers"
                                  ? fmt::format("'high' must be greater than 'low' ({}), not {}, the same float32",
                                                input.low, high.Scalar())
                                  : fmt::format("'high' must be greater than 'low' ({})", input.low));
        }
    }
    if (auto at = fields.optional("min_at")) {
        input.min_at = fields.choice(*at, "min_at", {"first", "last"});
    }
    if (auto at = fields.optional("max_at")) {
        input.max_at = fields.choice(*at, "max_at", {"first", "last"});
    }
    if (auto infinities = fields.optional("infinities")) {
        input.infinities = fields.choice(*infinities, "infinities", {"true", "false"}) == "true";
    }
    return input;
}

Shape read_shape(const yaml::Mapping& fields, const YAML::Node& node, const std::string& key) {
    if (key == "sizes" || key == "size") {
        return {static_cast<std::uint64_t>(fields.integer(node, key, 0, max_size))};
    }
    const auto extents = fields.sequence(node, key);
    if (extents.size() != 2) {
        fields.fail(node, fmt::format("each of '{}' must be [rows, cols]", key));
    }
    Shape shape;
    for (const auto& extent : extents) {
        shape.push_back(static_cast<std::uint64_t>(fields.integer(extent, key, 1, max_size)));
    }
    if (element_count(shape) > max_elements) {
        fields.fail(node, fmt::format("'{}': {} x {} elements is more than {}", key, shape[0], shape[1], max_size));
    }
    return shape;
}

// `sizes` (vectors) or `shapes` (matrices), exactly one of them.
std::vector<Shape> read_extents(const yaml::Mapping& fields, const YAML::Node& at, const char* one, const char* many,
                                bool list) {
    const auto sizes = fields.optional(list ? "sizes" : "size");
    const auto shapes = fields.optional(list ? "shapes" : "shape");
    if (sizes.has_value() == shapes.has_value()) {
        fields.fail(at, fmt::format("give either '{}' or '{}'", one, many));
    }
    const std::string key = sizes ? one : many;
    if (!list) {
        return {read_shape(fields, sizes ? *sizes : *shapes, key)};
    }
    std::vector<Shape> result;
    for (const auto& node : fields.sequence(sizes ? *sizes : *shapes, key)) {
        result.push_back(read_shape(fields, node, key));
    }
    return result;
}

CaseGroup read_group(const std::filesystem::path& file, const YAML::Node& node, const Rubric& rubric) {
    yaml::Mapping fields(file, node, "a group",
                         {"name", "visibility", "points", "sizes", "shapes", "inputs", "parameters", "seed",
                          "case_seconds", "race_check", "memory_check"});
    CaseGroup group;
    group.where = place_of(file, node);
    group.name = read_name(fields, fields.required("name"), "name");
    group.visibility = read_visibility(fields, fields.optional("visibility"));
    group.points = fields.number(fields.required("points"), "points", 0.0, 1e6);
    group.shapes = read_extents(fields, node, "sizes", "shapes", true);
    for (const auto& input : fields.sequence(fields.required("inputs"), "inputs")) {
        group.inputs.push_back(read_input_entry(fields, input, rubric, "inputs"));
    }
    group.parameters = rubric.parameters;
    if (auto parameters = fields.optional("parameters")) {
        group.parameters = read_parameters(fields, *parameters, rubric.parameters);
    }
    group.seed = static_cast<std::uint64_t>(fields.integer(fields.required("seed"), "seed", 0, INT64_MAX));
    if (auto seconds = fields.optional("case_seconds")) {
        group.case_seconds = fields.number(*seconds, "case_seconds", 0.1, 3600.0);
    }
    if (auto race_check = fields.optional("race_check")) {
        group.race_check = fields.choice(*race_check, "race_check", {"true", "false"}) == "true";
    }
    if (auto memory_check = fields.optional("memory_check")) {
        group.memory_check = fields.choice(*memory_check, "memory_check", {"true", "false"}) == "true";
    }
    return group;
}

SpeedTest read_speed(const std::filesystem::path& file, const YAML::Node& node, const Rubric& rubric) {
    yaml::Mapping fields(file, node, "'speed'",
                         {"size", "shape", "input", "parameters", "seed", "visibility", "metric", "scale", "warmup",
                          "min_samples", "max_samples", "target_rse", "max_seconds", "case_seconds", "tiers"});
    SpeedTest speed;
    speed.where = place_of(file, node);
    speed.shape = read_extents(fields, node, "size", "shape", false).front();
    speed.input = read_input_entry(fields, fields.required("input"), rubric, "input");
    speed.parameters = rubric.parameters;
    if (auto parameters = fields.optional("parameters")) {
        speed.parameters = read_parameters(fields, *parameters, rubric.parameters);
    }
    speed.seed = static_cast<std::uint64_t>(fields.integer(fields.required("seed"), "seed", 0, INT64_MAX));
    speed.visibility = read_visibility(fields, fields.optional("visibility"));
    if (auto metric = fields.optional("metric")) {
        speed.metric = fields.choice(*metric, "metric", {"ratio", "bandwidth"}) == "bandwidth" ? SpeedMetric::bandwidth
                                                                                               : SpeedMetric::ratio;
    }
    if (auto scale = fields.optional("scale")) {
        speed.scale = fields.choice(*scale, "scale", {"stepped", "linear"}) == "linear" ? SpeedScale::linear
                                                                                        : SpeedScale::stepped;
    }
    if (auto warmup = fields.optional("warmup")) {
        speed.sampling.warmup = static_cast<int>(fields.integer(*warmup, "warmup", 0, 1000));
    }
    if (auto samples = fields.optional("min_samples")) {
        speed.sampling.min_samples = static_cast<int>(fields.integer(*samples, "min_samples", 3, 10000));
    }
    if (auto samples = fields.optional("max_samples")) {
        speed.sampling.max_samples =
            static_cast<int>(fields.integer(*samples, "max_samples", speed.sampling.min_samples, 100000));
    }
    if (auto rse = fields.optional("target_rse")) {
        speed.sampling.target_rse = fields.number(*rse, "target_rse", 0.0001, 0.5);
    }
    if (auto seconds = fields.optional("max_seconds")) {
        speed.sampling.max_seconds = fields.number(*seconds, "max_seconds", 0.1, 3600.0);
    }
    if (auto seconds = fields.optional("case_seconds")) {
        speed.case_seconds = fields.number(*seconds, "case_seconds", 0.1, 3600.0);
    }
    // Best tier first: the smallest ratio, or the largest fraction of the copy bandwidth.
    const bool ratio = speed.metric == SpeedMetric::ratio;
    const char* bound_key = ratio ? "max_ratio" : "min_fraction";
    for (const auto& tier_node : fields.sequence(fields.required("tiers"), "tiers")) {
        yaml::Mapping tier_fields(file, tier_node, "a speed tier", {bound_key, "points"});
        SpeedTier tier;
        const auto bound_node = tier_fields.required(bound_key);
        const auto points_node = tier_fields.required("points");
        tier.bound = ratio ? tier_fields.number(bound_node, bound_key, 0.01, 1e6)
                           : tier_fields.number(bound_node, bound_key, 0.001, 1.0);
        tier.points = tier_fields.number(points_node, "points", 0.0, 1e6);
        if (!speed.tiers.empty() &&
            (ratio ? tier.bound <= speed.tiers.back().bound : tier.bound >= speed.tiers.back().bound)) {
            tier_fields.fail(bound_node,
                             fmt::format("tiers must be ordered by '{}', {}: {} follows {}", bound_key,
                                         ratio ? "increasing" : "decreasing", tier.bound, speed.tiers.back().bound));
        }
        if (!speed.tiers.empty() && tier.points >= speed.tiers.back().points) {
            tier_fields.fail(points_node, fmt::format("a slower tier must earn fewer points: {} follows {}",
                                                      tier.points, speed.tiers.back().points));
        }
        speed.tiers.push_back(tier);
    }
    return speed;
}

// One of `forbid` and `allow`: libraries and functions, added to what the defaults refuse or permit.
void read_api_list(const std::filesystem::path& file, const YAML::Node& node, const char* key,
                   std::vector<std::string>& libraries, std::vector<std::string>& functions) {
    yaml::Mapping fields(file, node, fmt::format("'{}'", key), {"libraries", "functions"});
    if (auto listed = fields.optional("libraries")) {
        for (const auto& item : fields.sequence(*listed, "libraries")) {
            const std::string name = fields.text(item, "libraries");
            const auto& known = known_libraries();
            if (std::find(known.begin(), known.end(), name) == known.end()) {
                fields.fail(item, fmt::format("unknown library '{}' (known: {})", name, fmt::join(known, ", ")));
            }
            libraries.push_back(name);
        }
    }
    if (auto listed = fields.optional("functions")) {
        static const std::regex pattern(R"([A-Za-z_][A-Za-z0-9_]*\*?)");
        for (const auto& item : fields.sequence(*listed, "functions")) {
            const std::string name = fields.text(item, "functions");
            if (!std::regex_match(name, pattern)) {
                fields.fail(item,
                            fmt::format("'{}' is not a C function name (a trailing '*' matches any ending)", name));
            }
            functions.push_back(name);
        }
    }
}

}  // namespace

std::string format_shape(const Shape& shape) {
    return shape.size() == 1 ? fmt::format("n={}", shape[0]) : fmt::format("{}", fmt::join(shape, "x"));
}

std::uint64_t element_count(const Shape& shape) {
    std::uint64_t count = 1;
    for (const auto extent : shape) {
        if (__builtin_mul_overflow(count, extent, &count)) {
            return std::numeric_limits<std::uint64_t>::max();
        }
    }
    return count;
}

std::string to_string(Visibility visibility) { return visibility == Visibility::hidden ? "hidden" : "visible"; }

namespace {

void check_schema(const yaml::Mapping& fields) {
    const auto schema = fields.required("schema");
    if (fields.integer(schema, "schema", 1, 1000) != schema_version) {
        fields.fail(schema, fmt::format("unsupported rubric schema {}; this cugrade reads schema {}", schema.Scalar(),
                                        schema_version));
    }
}

Limits read_limits(const std::filesystem::path& file, const YAML::Node& node, Limits limits) {
    yaml::Mapping limit_fields(file, node, "'limits'", {"compile_seconds", "case_seconds", "memory_mib"});
    if (auto seconds = limit_fields.optional("compile_seconds")) {
        limits.compile_seconds = limit_fields.number(*seconds, "compile_seconds", 1.0, 3600.0);
    }
    if (auto seconds = limit_fields.optional("case_seconds")) {
        limits.case_seconds = limit_fields.number(*seconds, "case_seconds", 0.1, 3600.0);
    }
    if (auto memory = limit_fields.optional("memory_mib")) {
        limits.memory_bytes = static_cast<std::uint64_t>(limit_fields.integer(*memory, "memory_mib", 256, 1 << 24))
                              << 20;
    }
    return limits;
}

double read_tolerance_lambda(const std::filesystem::path& file, const YAML::Node& node, double lambda) {
    yaml::Mapping tolerance_fields(file, node, "'tolerance'", {"lambda"});
    if (auto given = tolerance_fields.optional("lambda")) {
        lambda = tolerance_fields.number(*given, "lambda", 1.0, 100.0);
    }
    return lambda;
}

ApiRules read_apis(const yaml::Mapping& fields, ApiRules apis) {
    if (auto forbid = fields.optional("forbid")) {
        read_api_list(fields.file(), *forbid, "forbid", apis.forbidden_libraries, apis.forbidden_functions);
    }
    if (auto allow = fields.optional("allow")) {
        read_api_list(fields.file(), *allow, "allow", apis.allowed_libraries, apis.allowed_functions);
    }
    return apis;
}

std::map<std::string, InputDistribution> read_inputs(const yaml::Mapping& fields) {
    const auto inputs = fields.required("inputs");
    if (!inputs.IsMap() || inputs.size() == 0) {
        fields.fail(inputs, "'inputs' must map names to input distributions");
    }
    std::map<std::string, InputDistribution> read;
    for (const auto& entry : inputs) {
        const std::string name = read_name(fields, entry.first, "inputs");
        read[name] = read_input(fields.file(), name, entry.second);
    }
    return read;
}

std::vector<CaseGroup> read_groups(const yaml::Mapping& fields, const std::vector<YAML::Node>& group_nodes,
                                   const Rubric& rubric) {
    std::vector<CaseGroup> groups;
    std::set<std::string> group_names;
    for (const auto& group_node : group_nodes) {
        CaseGroup group = read_group(fields.file(), group_node, rubric);
        if (group.name == "speed" || !group_names.insert(group.name).second) {
            fields.fail(group_node["name"], fmt::format("group name '{}' is used twice", group.name));
        }
        groups.push_back(std::move(group));
    }
    return groups;
}

// Vectors or matrices: the first group's choice, which every group and the speed test must share.
std::size_t read_dimensions(const yaml::Mapping& fields, const std::vector<YAML::Node>& group_nodes,
                            const Rubric& rubric) {
    const std::size_t dimensions = rubric.groups.front().shapes.front().size();
    for (std::size_t i = 0; i < rubric.groups.size(); ++i) {
        if (rubric.groups[i].shapes.front().size() != dimensions) {
            fields.fail(group_nodes[i], "every group must give 'sizes', or every group 'shapes'");
        }
    }
    if (rubric.speed && rubric.speed->shape.size() != dimensions) {
        fields.fail(fields.required("speed"), dimensions == 1 ? "'speed' must give a 'size', as the groups do"
                                                              : "'speed' must give a 'shape', as the groups do");
    }
    return dimensions;
}

}  // namespace

Rubric load_rubric(const std::filesystem::path& file) {
    const YAML::Node document = yaml::load_file(file);
    yaml::Mapping fields(file, document, "the rubric",
                         {"schema", "exercise", "limits", "calls_per_case", "tolerance", "inputs", "parameters",
                          "groups", "speed", "forbid", "allow"});
    Rubric rubric;
    rubric.file = file;
    check_schema(fields);
    rubric.exercise = read_name(fields, fields.required("exercise"), "exercise");
    if (auto limits = fields.optional("limits")) {
        rubric.limits = read_limits(file, *limits, rubric.limits);
    }
    if (auto calls = fields.optional("calls_per_case")) {
        rubric.calls_per_case = static_cast<int>(fields.integer(*calls, "calls_per_case", 1, 100));
    }
    if (auto tolerance = fields.optional("tolerance")) {
        rubric.tolerance_lambda = read_tolerance_lambda(file, *tolerance, rubric.tolerance_lambda);
    }
    rubric.apis = read_apis(fields, rubric.apis);
    rubric.inputs = read_inputs(fields);
    if (auto parameters = fields.optional("parameters")) {
        rubric.parameters = read_parameters(fields, *parameters, {});
    }
    const auto group_nodes = fields.sequence(fields.required("groups"), "groups");
    rubric.groups = read_groups(fields, group_nodes, rubric);
    if (auto speed = fields.optional("speed")) {
        rubric.speed = read_speed(file, *speed, rubric);
    }
    rubric.dimensions = read_dimensions(fields, group_nodes, rubric);
    return rubric;
}

std::string input_label(const std::vector<std::string>& names) { return fmt::format("{}", fmt::join(names, "+")); }

namespace {

// The plan's inputs: one per name; the case's seed draws the first, and the others seeds of their own.
std::vector<plan::Input> plan_inputs(const Rubric& rubric, const std::vector<std::string>& names, std::uint64_t seed) {
    std::vector<plan::Input> inputs;
    for (std::size_t k = 0; k < names.size(); ++k) {
        inputs.push_back({rubric.inputs.at(names[k]), plan::operand_seed(seed, k)});
    }
    return inputs;
}

}  // namespace

std::vector<CasePlan> plan_cases(const Rubric& rubric) {
    std::vector<CasePlan> cases;
    for (const auto& group : rubric.groups) {
        const double per_case = group.points / static_cast<double>(group.shapes.size() * group.inputs.size());
        for (const Shape& shape : group.shapes) {
            for (const auto& input : group.inputs) {
                CasePlan plan;
                plan.id = fmt::format("{}/{}/{}", group.name, format_shape(shape), input_label(input));
                plan.group = group.name;
                plan.visibility = group.visibility;
                plan.shape = shape;
                // Each case draws its own data: the group's seed, the size and the input together pick it.
                plan.inputs = plan_inputs(rubric, input, fnv1a64(plan.id, group.seed));
                plan.parameters = numbers_of(group.parameters);
                plan.calls = rubric.calls_per_case;
                plan.lambda = rubric.tolerance_lambda;
                plan.max_points = per_case;
                plan.case_seconds = group.case_seconds > 0 ? group.case_seconds : rubric.limits.case_seconds;
                plan.race_check = group.race_check;
                plan.memory_check = group.memory_check;
                cases.push_back(std::move(plan));
            }
        }
    }
    if (rubric.speed) {
        const SpeedTest& speed = *rubric.speed;
        CasePlan plan;
        plan.id = fmt::format("speed/{}/{}", format_shape(speed.shape), input_label(speed.input));
        plan.group = "speed";
        plan.visibility = speed.visibility;
        plan.shape = speed.shape;
        plan.inputs = plan_inputs(rubric, speed.input, speed.seed);
        plan.parameters = numbers_of(speed.parameters);
        plan.calls = rubric.calls_per_case;
        plan.lambda = rubric.tolerance_lambda;
        plan.max_points = speed.max_points();
        plan.case_seconds = speed.case_seconds > 0 ? speed.case_seconds : rubric.limits.case_seconds;
        plan.timed = true;
        plan.timing.sampling = speed.sampling;
        plan.timing.metric = speed.metric;
        for (const auto& tier : speed.tiers) {
            plan.timing.boundaries.push_back(tier.bound);
        }
        cases.push_back(std::move(plan));
    }
    return cases;
}

std::uint64_t draw_grading_secret() {
    std::random_device source;  // getrandom(2) on Linux
    std::uint64_t secret = 0;
    while (secret == 0) {
        secret = (static_cast<std::uint64_t>(source()) << 32) ^ source();
    }
    return secret;
}

void hide_seeds(std::vector<CasePlan>& cases, std::uint64_t secret) {
    for (CasePlan& c : cases) {
        if (c.visibility == Visibility::hidden || c.timed) {
            for (plan::Input& input : c.inputs) {
                input.seed = plan::secret_seed(input.seed, secret);
            }
        }
    }
}

namespace {

// Every value the rubric wrote that its exercise declares is one the declaration accepts, wherever it was written.
void check_written_values(const ParameterValues& parameters, const std::map<std::string, ParameterRule>& rules) {
    for (const auto& [name, value] : parameters) {
        const auto rule = rules.find(name);
        if (rule == rules.end() || !value.where) {
            continue;
        }
        if (const std::string problem = parameter_problem(name, rule->second, value); !problem.empty()) {
            throw FileError(*value.where, problem);
        }
    }
}

// Where to point at a relation two values break: the one written last, most likely the group's own; a default is
// written nowhere.
SourceLocation later_written(const ParameterValue& a, const ParameterValue& b, const SourceLocation& otherwise) {
    if (!a.where || !b.where) {
        return a.where ? *a.where : b.where ? *b.where : otherwise;
    }
    return std::pair(a.where->line, a.where->column) > std::pair(b.where->line, b.where->column) ? *a.where : *b.where;
}

// The parameters of one group (or the speed test) as the harness will get them: only the exercise's, each value
// accepted by its declaration, the defaults filled in, and each relation kept.
void fit_parameters(const std::string& what, const SourceLocation& where, const std::string& exercise,
                    ParameterValues& parameters, const std::map<std::string, ParameterRule>& rules) {
    for (const auto& [name, value] : parameters) {
        if (rules.count(name) == 0) {
            std::vector<std::string> known;
            for (const auto& [known_name, rule] : rules) {
                known.push_back(known_name);
            }
            throw FileError(where, known.empty() ? fmt::format("{}: {} has no parameters, so 'parameters' cannot set "
                                                               "'{}'",
                                                               what, exercise, name)
                                                 : fmt::format("{}: {} has no parameter '{}' (it has: {})", what,
                                                               exercise, name, fmt::join(known, ", ")));
        }
    }
    check_written_values(parameters, rules);
    for (const auto& [name, rule] : rules) {
        parameters.emplace(name, default_value(rule));
    }
    for (const auto& [name, rule] : rules) {
        if (const std::string problem = relation_problem(name, rules, parameters); !problem.empty()) {
            throw FileError(later_written(parameters.at(name), parameters.at(rule.greater_than), where),
                            fmt::format("{}: {}", what, problem));
        }
    }
}

void fit_inputs(const std::string& what, const SourceLocation& where, const Rubric& rubric,
                const std::vector<std::vector<std::string>>& inputs, const RubricChoices& choices) {
    for (const auto& names : inputs) {
        if (names.size() != 1 && names.size() != choices.operands.size()) {
            throw FileError(where, fmt::format("{}: [{}] names {} inputs, but {} takes {} ({}): name one input for "
                                               "all, or one for each",
                                               what, fmt::join(names, ", "), names.size(), rubric.exercise,
                                               choices.operands.size(), fmt::join(choices.operands, ", ")));
        }
    }
}

}  // namespace

void fit_rubric(Rubric& rubric, const RubricChoices& choices) {
    check_written_values(rubric.parameters, choices.parameters);
    for (auto& group : rubric.groups) {
        const std::string what = fmt::format("group '{}'", group.name);
        fit_inputs(what, group.where, rubric, group.inputs, choices);
        fit_parameters(what, group.where, rubric.exercise, group.parameters, choices.parameters);
    }
    if (rubric.speed) {
        fit_inputs("'speed'", rubric.speed->where, rubric, {rubric.speed->input}, choices);
        fit_parameters("'speed'", rubric.speed->where, rubric.exercise, rubric.speed->parameters, choices.parameters);
    }
}

}  // namespace cugrade
