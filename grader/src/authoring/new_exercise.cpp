#include "authoring/new_exercise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "base/error.hpp"
#include "authoring/exercise_skeleton.hpp"
#include "base/file_io.hpp"
#include "authoring/name_probe.hpp"

namespace cugrade {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t longest_name = 40;

// Names the exercise cannot take that no header declares: C++'s keywords (C++20, alternative tokens included), a
// program's main, the course's folder of shared code. What the C and C++ libraries and CUDA declare is asked of the
// compiler (name_probe.hpp).
constexpr std::array reserved_names = {
    "alignas",     "alignof",   "and",        "and_eq",    "asm",      "auto",         "bitand",
    "bitor",       "bool",      "break",      "case",      "catch",    "char",         "char8_t",
    "char16_t",    "char32_t",  "class",      "compl",     "concept",  "const",        "consteval",
    "constexpr",   "constinit", "const_cast", "continue",  "co_await", "co_return",    "co_yield",
    "decltype",    "default",   "delete",     "do",        "double",   "dynamic_cast", "else",
    "enum",        "explicit",  "export",     "extern",    "false",    "float",        "for",
    "friend",      "goto",      "if",         "inline",    "int",      "long",         "mutable",
    "namespace",   "new",       "noexcept",   "not",       "not_eq",   "nullptr",      "operator",
    "or",          "or_eq",     "private",    "protected", "public",   "register",     "reinterpret_cast",
    "requires",    "return",    "short",      "signed",    "sizeof",   "static",       "static_assert",
    "static_cast", "struct",    "switch",     "template",  "this",     "thread_local", "throw",
    "true",        "try",       "typedef",    "typeid",    "typename", "union",        "unsigned",
    "using",       "virtual",   "void",       "volatile",  "wchar_t",  "while",        "xor",
    "xor_eq",      "main",      "common"};

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
    if (std::find(reserved_names.begin(), reserved_names.end(), std::string_view(name)) != reserved_names.end() ||
        name.starts_with("cuda") || name.starts_with("cugrade")) {
        throw UsageError(fmt::format("cannot name an exercise '{}': its entry point would clash with a name of C++, "
                                     "CUDA or the course",
                                     name));
    }
}

// Refuses a name the C or C++ library or CUDA declares: the entry point's declaration would clash with it in the
// harness, the reference or a submission ("read" gives a harness that does not compile).
void check_name_free(const std::string& name, const Toolchain& toolchain) {
    const std::optional<NameOwner> owner = name_owner(name, toolchain);
    if (!owner) {
        return;
    }
    if (owner->library.empty()) {
        throw UsageError(fmt::format("cannot name an exercise '{0}': '{0}' is a name the C, C++ or CUDA headers "
                                     "already declare; choose another",
                                     name));
    }
    throw UsageError(fmt::format("cannot name an exercise '{0}': '{0}' is a {1} {2} already {3} ({4}); choose another",
                                 name, owner->macro ? "macro" : "name", owner->library,
                                 owner->macro ? "defines" : "declares", owner->header));
}

// Refuses a path whose folders a symbolic link leads out of the course: `new` writes inside the course alone.
void check_inside_course(const fs::path& course_root, const fs::path& relative) {
    std::error_code ec;
    const fs::path course = fs::weakly_canonical(course_root, ec);
    fs::path at = course_root;
    for (const auto& part : relative) {
        at /= part;
        const fs::file_status status = fs::symlink_status(at, ec);
        if (!fs::exists(status)) {
            return;  // nothing below it exists either: it is created inside
        }
        if (!fs::is_symlink(status)) {
            continue;
        }
        const fs::path target = fs::weakly_canonical(at, ec);
        if (ec || !lies_under(target, course)) {
            throw UsageError(fmt::format("{} is a symbolic link out of the course (to {}): remove it, or point it "
                                         "inside the course",
                                         at.string(), fs::read_symlink(at, ec).string()));
        }
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

std::vector<fs::path> new_exercise(const fs::path& course_root, const std::string& name, const std::string& title,
                                   const Toolchain& toolchain) {
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
        throw UsageError(
            fmt::format("exercise '{}' exists already: {}", name, (course_root / "exercises" / name).string()));
    }
    for (const auto& [path, text] : files) {
        if (fs::exists(fs::symlink_status(course_root / path))) {
            throw UsageError(fmt::format("{} exists already: remove it, or name the exercise otherwise",
                                         (course_root / path).string()));
        }
        check_inside_course(course_root, path.parent_path());
    }
    check_name_free(name, toolchain);
    std::vector<fs::path> written;
    for (const auto& [path, text] : files) {
        fs::create_directories((course_root / path).parent_path());
        write_file(course_root / path, text);
        written.push_back(path);
    }
    return written;
}

}  // namespace cugrade
