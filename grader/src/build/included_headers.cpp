#include "build/included_headers.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "base/file_io.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// The source's logical lines (backslash-newline spliced, comments blanked), each with the number of its first line.
std::vector<std::pair<std::size_t, std::string>> logical_lines(const std::string& source) {
    std::vector<std::pair<std::size_t, std::string>> lines;
    std::istringstream in(source);
    std::size_t number = 0;
    bool in_block = false;
    std::string pending;
    std::size_t pending_line = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (!line.empty() && line.back() == '\r') {
            line.pop_back();
        }
        if (pending.empty()) {
            pending_line = number;
        }
        if (!line.empty() && line.back() == '\\') {
            pending += line.substr(0, line.size() - 1);
            continue;
        }
        pending += line;
        lines.emplace_back(pending_line, code_without_comments(pending, in_block));
        pending.clear();
    }
    return lines;
}

bool names_file(const std::string& path, const std::string& name) {
    if (name.empty()) {
        return false;
    }
    const std::string bare = path.rfind("./", 0) == 0 ? path.substr(2) : path;
    const std::size_t at = bare.size() - name.size();
    return bare == name ||
           (bare.size() > name.size() && bare.compare(at, name.size(), name) == 0 && bare[at - 1] == '/');
}

}  // namespace

std::string code_without_comments(const std::string& line, bool& in_block) {
    std::string code;
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (in_block) {
            if (line.compare(i, 2, "*/") == 0) {
                in_block = false;
                code += ' ';
                ++i;
            }
        } else if (line.compare(i, 2, "//") == 0) {
            break;
        } else if (line.compare(i, 2, "/*") == 0) {
            in_block = true;
            ++i;
        } else {
            code += line[i];
        }
    }
    return code;
}

std::vector<std::string> read_dependency_list(const fs::path& file) {
    const std::string text = read_file(file);
    std::vector<std::string> files;
    std::string current;
    bool past_target = false;
    const auto end_word = [&] {
        if (!current.empty()) {
            if (past_target) {
                files.push_back(current);
            } else if (current == ":" || current.back() == ':') {
                past_target = true;  // "submission.o :" or "submission.o:"
            }
            current.clear();
        }
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
            end_word();
            ++i;
        } else if (c == '\\' && i + 1 < text.size() && (text[i + 1] == ' ' || text[i + 1] == '#')) {
            current += text[++i];
        } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
            current += text[++i];
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            end_word();
        } else {
            current += c;
        }
    }
    end_word();
    return files;
}

std::vector<IncludeDirective> include_directives(const std::string& source) {
    static const std::regex directive(R"re(^\s*#\s*include\s*(<([^>]*)>|"([^"]*)"|(\S.*?))\s*$)re");
    std::vector<IncludeDirective> found;
    for (const auto& [line, code] : logical_lines(source)) {
        std::smatch m;
        if (std::regex_match(code, m, directive)) {
            found.push_back({line, m[1].str(), m[2].matched ? m[2].str() : m[3].str()});
        }
    }
    return found;
}

std::optional<SubmissionLibraries> included_libraries(const std::vector<std::string>& dependencies,
                                                      const std::string& source) {
    const auto start = std::find_if(dependencies.begin(), dependencies.end(), [](const std::string& path) {
        return fs::path(path).filename() == submission_start_header;
    });
    if (start == dependencies.end()) {
        return std::nullopt;
    }
    const std::vector<std::string> own(start + 1, dependencies.end());
    const std::vector<IncludeDirective> directives = include_directives(source);

    // The headers are listed as the compiler first opened them: what one #include brought in lies between its own
    // header and the header of the next #include that opened one. One of a file opened before opens nothing new;
    // one whose file is not listed at all (a computed #include) may have brought in some of what follows the one
    // before it.
    struct Segment {
        std::size_t start = 0;
        const IncludeDirective* directive = nullptr;
        bool certain = true;
    };
    std::vector<Segment> segments = {{0, nullptr, false}};
    std::size_t cursor = 0;
    for (const auto& directive : directives) {
        bool located = false;
        for (std::size_t i = cursor; i < own.size() && !located; ++i) {
            if (names_file(own[i], directive.name)) {
                segments.push_back({i, &directive, true});
                cursor = i + 1;
                located = true;
            }
        }
        const auto opened_before = [&](const std::string& path) { return names_file(path, directive.name); };
        const bool known = located || std::any_of(dependencies.begin(), start + 1 + static_cast<std::ptrdiff_t>(cursor),
                                                  opened_before);
        segments.back().certain = segments.back().certain && known;
    }

    std::vector<IncludedLibrary> libraries;
    std::set<const KnownLibrary*> seen;
    // An #include that names a library's header, where the compile used it.
    for (const auto& directive : directives) {
        const LibraryHeader named = library_of_header(directive.name);
        const bool used = std::any_of(own.begin(), own.end(),
                                      [&](const std::string& path) { return names_file(path, directive.name); });
        if (named.library != nullptr && used && seen.insert(named.library).second) {
            libraries.push_back({named.library, named.name, directive, true});
        }
    }
    // What an #include of something else brought in, or the file, where no one #include is certain.
    for (std::size_t s = 0; s < segments.size(); ++s) {
        const Segment& segment = segments[s];
        if (segment.certain && library_of_header(segment.directive->name).library != nullptr) {
            continue;  // a library's header: what it brings in is part of it
        }
        const std::size_t end = s + 1 < segments.size() ? segments[s + 1].start : own.size();
        std::set<std::string> brought;  // by a library found earlier in the same part
        for (std::size_t i = segment.start; i < end; ++i) {
            const LibraryHeader header = library_of_header(own[i]);
            if (header.library == nullptr || brought.count(header.library->name) != 0) {
                continue;
            }
            brought.insert(header.library->brings.begin(), header.library->brings.end());
            if (seen.insert(header.library).second) {
                libraries.push_back({header.library, header.name,
                                     segment.certain ? std::optional(*segment.directive) : std::nullopt, false});
            }
        }
    }
    std::stable_sort(libraries.begin(), libraries.end(), [](const IncludedLibrary& a, const IncludedLibrary& b) {
        return (a.directive ? a.directive->line : 0) < (b.directive ? b.directive->line : 0);
    });
    SubmissionLibraries result{libraries, {}};
    for (const auto& path : own) {
        if (const LibraryHeader header = library_of_header(path); header.library != nullptr) {
            result.present.insert(header.library->name);
        }
    }
    return result;
}

}  // namespace cugrade
