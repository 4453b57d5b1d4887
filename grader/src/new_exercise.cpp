#include "cugrade/new_exercise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "cugrade/error.hpp"
#include "exercise_skeleton.hpp"
#include "file_io.hpp"

namespace cugrade {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t longest_name = 40;

// Names the exercise cannot take: C++ keywords and common names of the C and CUDA libraries, which its extern "C"
// entry point would clash with, and the course's own folder of shared code.
constexpr std::array taken_names = {
    "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "concept",
    "const", "consteval", "constexpr", "constinit", "continue", "decltype", "default", "delete", "do", "double",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int",
    "long", "mutable", "namespace", "new", "noexcept", "not", "nullptr", "operator", "or", "private", "protected",
    "public", "register", "requires", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "template", "this", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "while", "xor", "main", "common", "abs", "min", "max", "exp", "log", "pow",
    "sqrt", "sin", "cos", "tan", "floor", "ceil", "round", "fma", "malloc", "free", "memcpy", "memset", "printf",
    "exit", "abort", "assert"};

std::string replaced(std::string text, std::string_view token, const std::string& value) {
    for (std::size_t at = text.find(token); at != std::string::npos; at = text.find(token, at + value.size())) {
        text.replace(at, token.size(), value);
    }
    return text;
}

void check_name(const std::string& name) {
    const bool well_formed = !name.empty() && name.size() <= longest_name &&
                             std::islower(static_cast<unsigned char>(name.front())) &&
                             std::all_of(name.begin(), name.end(), [](char c) {
                                 return std::islower(static_cast<unsigned char>(c)) ||
                                        std::isdigit(static_cast<unsigned char>(c)) || c == '_';
                             });
    if (!well_formed) {
        throw UsageError(fmt::format("cannot name an exercise '{}': use lowercase letters, digits and '_', starting "
                                     "with a letter, at most {} characters",
                                     name, longest_name));
    }
    if (std::find(taken_names.begin(), taken_names.end(), std::string_view(name)) != taken_names.end() ||
        name.starts_with("cuda") || name.starts_with("cugrade")) {
        throw UsageError(fmt::format("cannot name an exercise '{}': its entry point would clash with a name of C++, "
                                     "CUDA or the course",
                                     name));
    }
}

}  // namespace

std::string default_title(const std::string& name) {
    std::string title = replaced(name, "_", " ");
    if (!title.empty()) {
        title.front() = static_cast<char>(std::toupper(static_cast<unsigned char>(title.front())));
    }
    return title;
}

std::vector<fs::path> new_exercise(const fs::path& course_root, const std::string& name, const std::string& title) {
    check_name(name);
    if (!fs::is_regular_file(course_root / "exercises" / "common" / "harness.cuh")) {
        throw UsageError(fmt::format("'{}' is not a course with the shared harness (exercises/common/harness.cuh): "
                                     "give --course the course's folder",
                                     course_root.string()));
    }
    if (title.find_first_of("\n\r\"") != std::string::npos) {
        throw UsageError("a title is one line, without '\"'");
    }
    std::string upper = name;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); });
    const auto fill = [&](const std::string& text) {
        return replaced(replaced(replaced(text, "@name@", name), "@NAME@", upper), "@Title@", title);
    };

    std::vector<std::pair<fs::path, std::string>> files;
    for (const auto& file : exercise_skeleton()) {
        files.emplace_back(fill(file.path), fill(file.text));
    }
    if (fs::exists(course_root / "exercises" / name)) {
        throw UsageError(fmt::format("exercise '{}' exists already: {}", name,
                                     (course_root / "exercises" / name).string()));
    }
    for (const auto& [path, text] : files) {
        if (fs::exists(fs::symlink_status(course_root / path))) {
            throw UsageError(fmt::format("{} exists already: remove it, or name the exercise otherwise",
                                         (course_root / path).string()));
        }
    }
    std::vector<fs::path> written;
    for (const auto& [path, text] : files) {
        fs::create_directories((course_root / path).parent_path());
        write_file(course_root / path, text);
        written.push_back(path);
    }
    return written;
}

}  // namespace cugrade
