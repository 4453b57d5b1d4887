// course.yaml (course_file.hpp).
#include "course/course_file.hpp"

#include <regex>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/yaml_fields.hpp"

namespace cugrade {

CourseFile load_course_file(const std::filesystem::path& file, const std::vector<std::string>& known_exercises) {
    CourseFile course;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
        return course;
    }
    const yaml::Mapping fields(file, yaml::load_file(file), "the course file", {"exercises", "late", "arch"});
    if (const auto exercises = fields.optional("exercises")) {
        for (const YAML::Node& entry : fields.sequence(*exercises, "exercises")) {
            const std::string name = fields.text(entry, "exercises");
            if (std::find(known_exercises.begin(), known_exercises.end(), name) == known_exercises.end()) {
                const std::string suggestion = yaml::closest(name, known_exercises);
                fields.fail(entry, suggestion.empty() ? fmt::format("no exercise '{}' in the course (it has {})", name,
                                                                    fmt::join(known_exercises, ", "))
                                                      : fmt::format("no exercise '{}' in the course (did you mean "
                                                                    "'{}'?)",
                                                                    name, suggestion));
            }
            if (std::find(course.exercises.begin(), course.exercises.end(), name) != course.exercises.end()) {
                fields.fail(entry, fmt::format("exercise '{}' is named twice", name));
            }
            course.exercises.push_back(name);
        }
    }
    if (const auto arch = fields.optional("arch")) {
        course.arch = fields.text(*arch, "arch");
        static const std::regex nvcc_arch(R"(sm_[0-9]+[af]?)");
        if (!std::regex_match(course.arch, nvcc_arch)) {
            fields.fail(*arch, fmt::format("'arch' is the architecture of the GPUs the course grades on, as nvcc "
                                           "names it (sm_90), not '{}'",
                                           course.arch));
        }
    }
    if (const auto late = fields.optional("late")) {
        course.late = read_late_policy(file, *late);
    }
    return course;
}

}  // namespace cugrade
