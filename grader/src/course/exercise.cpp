#include "course/exercise.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "base/diagnosis.hpp"
#include "course/contract_rules_yaml.hpp"
#include "base/error.hpp"
#include "base/file_io.hpp"
#include "course/parameter_rules.hpp"
#include "base/yaml_fields.hpp"

namespace cugrade {

Course open_course(const std::filesystem::path& root) {
    Course course{root, read_kit(root)};
    if (course.kit) {
        verify_kit(root, *course.kit);
    }
    return course;
}

std::vector<std::string> Course::exercise_names() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(exercises_dir(), ec)) {
        if (entry.is_directory() && std::filesystem::is_regular_file(entry.path() / "exercise.yaml")) {
            names.push_back(entry.path().filename().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

namespace {

void require_known(const Course& course, const std::string& name) {
    const auto names = course.exercise_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
        const std::string suggestion = yaml::closest(name, names);
        throw UsageError(suggestion.empty()
                             ? fmt::format("unknown exercise '{}' (known: {})", name, fmt::join(names, ", "))
                             : fmt::format("unknown exercise '{}' (did you mean '{}'?)", name, suggestion));
    }
}

std::vector<std::string> read_entry_points(const yaml::Mapping& fields) {
    std::vector<std::string> entry_points;
    for (const auto& entry : fields.sequence(fields.required("entry_points"), "entry_points")) {
        entry_points.push_back(fields.text(entry, "entry_points"));
    }
    return entry_points;
}

std::vector<std::string> read_operands(const yaml::Mapping& fields, const YAML::Node& operands) {
    std::vector<std::string> names;
    for (const auto& operand : fields.sequence(operands, "operands")) {
        names.push_back(fields.text(operand, "operands"));
    }
    if (names.empty()) {
        fields.fail(operands, "'operands' names the inputs the harness draws for each case: at least one");
    }
    return names;
}

std::vector<Baseline> read_baselines(const yaml::Mapping& fields, const YAML::Node& baselines,
                                     const std::filesystem::path& directory) {
    if (!baselines.IsMap()) {
        fields.fail(baselines, "'baselines' maps a name to {source: FILE, link: [LIBRARY...]}");
    }
    std::vector<Baseline> read;
    for (const auto& entry : baselines) {
        yaml::Mapping baseline_fields(fields.file(), entry.second, "a baseline", {"source", "link"});
        Baseline baseline;
        baseline.name = fields.text(entry.first, "baselines");
        baseline.source = directory / baseline_fields.text(baseline_fields.required("source"), "source");
        if (auto link = baseline_fields.optional("link")) {
            for (const auto& library : baseline_fields.sequence(*link, "link")) {
                baseline.link.push_back(baseline_fields.text(library, "link"));
            }
        }
        read.push_back(std::move(baseline));
    }
    return read;
}

void require_diagnosis_topic(const yaml::Mapping& fields, const YAML::Node& at, const std::string& topic) {
    if (std::none_of(diagnosis_topics.begin(), diagnosis_topics.end(),
                     [&](const auto& known) { return known.first == topic; })) {
        std::vector<std::string> known;
        for (const auto& t : diagnosis_topics) {
            known.push_back(t.first);
        }
        fields.fail(at, fmt::format("unknown diagnosis topic '{}' (known: {})", topic, fmt::join(known, ", ")));
    }
}

bool has_heading(const std::string& markdown, const std::string& title) {
    static const std::regex heading(R"(^#+\s+(.*?)\s*$)");
    bool found = false;
    std::istringstream lines(markdown);
    for (std::string line; std::getline(lines, line) && !found;) {
        std::smatch match;
        found = std::regex_match(line, match, heading) && match[1] == title;
    }
    return found;
}

std::map<std::string, std::string> read_readme_sections(const yaml::Mapping& fields, const YAML::Node& sections,
                                                        const std::filesystem::path& directory) {
    if (!sections.IsMap()) {
        fields.fail(sections, "'readme_sections' maps a diagnosis topic to the title of a section of README.md");
    }
    std::string readme;
    try {
        readme = read_file(directory / "README.md");
    } catch (const std::runtime_error&) {
        fields.fail(sections, fmt::format("'readme_sections' needs {}, which cannot be read",
                                          (directory / "README.md").string()));
    }
    std::map<std::string, std::string> titles;
    for (const auto& entry : sections) {
        const std::string topic = fields.text(entry.first, "readme_sections");
        require_diagnosis_topic(fields, entry.first, topic);
        const std::string title = fields.text(entry.second, topic);
        if (!has_heading(readme, title)) {
            fields.fail(entry.second, fmt::format("no section '{}' in {}", title, (directory / "README.md").string()));
        }
        titles[topic] = title;
    }
    return titles;
}

// Where the exercise's own files are, as a kit or as sources; each must be there.
void locate_course_files(const Course& course, Exercise& exercise) {
    std::vector<std::filesystem::path> required = {exercise.contract_header};
    if (course.kit) {
        exercise.prebuilt_harness = exercise.directory / "harness.o";
        required.push_back(exercise.prebuilt_harness);
        if (!course.kit->cpu_target.empty()) {
            exercise.prebuilt_cpu_objects = exercise.directory / "cpu";
            for (const std::string& object : cpu_course_object_files) {
                required.push_back(exercise.prebuilt_cpu_objects / object);
            }
        }
    } else {
        exercise.harness_source = exercise.directory / "harness.cu";
        exercise.reference_source = course.root / "reference" / exercise.submission_file;
        required.insert(required.end(), {exercise.harness_source, exercise.reference_source});
    }
    for (const auto& file : required) {
        if (!std::filesystem::is_regular_file(file)) {
            throw UsageError(fmt::format("exercise '{}' is incomplete: '{}' is missing", exercise.name, file.string()));
        }
    }
}

}  // namespace

Exercise load_exercise(const Course& course, const std::string& name) {
    require_known(course, name);
    Exercise exercise;
    exercise.name = name;
    exercise.directory = course.exercises_dir() / name;
    const auto file = exercise.directory / "exercise.yaml";
    yaml::Mapping fields(file, yaml::load_file(file), "the exercise description",
                         {"title", "submission", "contract", "entry_points", "operands", "parameters", "baselines",
                          "readme_sections", "rules"});
    exercise.title = fields.text(fields.required("title"), "title");
    exercise.submission_file = fields.text(fields.required("submission"), "submission");
    exercise.contract_header = exercise.directory / fields.text(fields.required("contract"), "contract");
    exercise.entry_points = read_entry_points(fields);
    if (auto operands = fields.optional("operands")) {
        exercise.choices.operands = read_operands(fields, *operands);
    }
    if (auto parameters = fields.optional("parameters")) {
        exercise.choices.parameters = read_parameter_rules(fields, *parameters);
    }
    if (auto rules = fields.optional("rules")) {
        exercise.rules = read_contract_rules(fields, *rules);
    }
    if (auto baselines = fields.optional("baselines"); baselines && !course.kit) {
        exercise.baselines = read_baselines(fields, *baselines, exercise.directory);
    }
    if (auto sections = fields.optional("readme_sections")) {
        exercise.readme_sections = read_readme_sections(fields, *sections, exercise.directory);
    }
    locate_course_files(course, exercise);
    return exercise;
}

std::string readme_pointer(const Exercise& exercise, const std::string& topic) {
    const auto section = exercise.readme_sections.find(topic);
    if (section == exercise.readme_sections.end()) {
        return "";
    }
    return fmt::format("see \"{}\" in exercises/{}/README.md", section->second, exercise.name);
}

Rubric load_exercise_rubric(const Exercise& exercise, const std::filesystem::path& file) {
    Rubric rubric = load_rubric(file);
    fit_rubric(rubric, exercise.choices);
    return rubric;
}

}  // namespace cugrade
