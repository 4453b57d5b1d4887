#include "cpu/cpu_source.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <stdexcept>

namespace cugrade {

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':'; }

int line_at(std::string_view text, std::size_t at) {
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// Where the launched expression before `end` starts in `out`: a name, perhaps qualified, perhaps with template
// arguments (`sgemm_kernel<false>`).
std::size_t launched_name_start(const std::string& out, std::size_t end) {
    std::size_t at = end;
    while (at > 0 && std::isspace(static_cast<unsigned char>(out[at - 1])) != 0) {
        --at;
    }
    if (at > 0 && out[at - 1] == '>') {
        int depth = 0;
        while (at > 0) {
            const char c = out[--at];
            depth += c == '>' ? 1 : c == '<' ? -1 : 0;
            if (depth == 0) {
                break;
            }
        }
    }
    while (at > 0 && is_name_char(out[at - 1])) {
        --at;
    }
    return at;
}

// `text` as it goes between the quotes of a C++ string literal.
std::string string_literal_text(const std::string& text) {
    std::string escaped;
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            escaped += '\\';
        }
        escaped += c == '\n' ? ' ' : c;
    }
    return escaped;
}

std::string dynamic_shared_declarations(const std::string& code) {
    static const std::regex declaration(
        R"(extern\s+__shared__\s+(?:__align__\s*\([^)]*\)\s*)?([A-Za-z_][\w:\s]*?)\s*\b([A-Za-z_]\w*)\s*\[\s*\]\s*;)");
    return std::regex_replace(code, declaration, "$1* $2 = static_cast<$1*>(::cugrade::cpu::dynamic_shared_memory());");
}

}  // namespace

std::string rewrite_for_cpu(std::string_view source) {
    std::string out;
    out.reserve(source.size() + 256);
    enum class In { code, line_comment, block_comment, string, character } in = In::code;
    for (std::size_t i = 0; i < source.size(); ++i) {
        const char c = source[i];
        const char next = i + 1 < source.size() ? source[i + 1] : '\0';
        switch (in) {
            case In::line_comment:
                in = c == '\n' ? In::code : in;
                out += c;
                continue;
            case In::block_comment:
                if (c == '*' && next == '/') {
                    out += "*/";
                    ++i;
                    in = In::code;
                } else {
                    out += c;
                }
                continue;
            case In::string:
            case In::character:
                out += c;
                if (c == '\\' && next != '\0') {
                    out += next;
                    ++i;
                } else if (c == (in == In::string ? '"' : '\'')) {
                    in = In::code;
                }
                continue;
            case In::code: break;
        }
        if (c == '/' && next == '/') {
            in = In::line_comment;
        } else if (c == '/' && next == '*') {
            out += "/*";
            ++i;
            in = In::block_comment;
            continue;
        } else if (c == '"') {
            in = In::string;
        } else if (c == '\'') {
            in = In::character;
        } else if (source.substr(i, 3) == "<<<") {
            std::size_t end = out.size();
            while (end > 0 && std::isspace(static_cast<unsigned char>(out[end - 1])) != 0) {
                --end;
            }
            const std::size_t start = launched_name_start(out, end);
            const std::string name = out.substr(start, end - start);
            const std::size_t close = source.find(">>>", i + 3);
            const std::size_t open =
                close == std::string_view::npos ? close : source.find_first_not_of(" \t\r\n", close + 3);
            if (name.empty() || open == std::string_view::npos || source[open] != '(') {
                throw std::runtime_error("line " + std::to_string(line_at(source, i)) +
                                         ": a kernel launch cugrade cannot read for the CPU");
            }
            // The kernel is called from a generic lambda, so that a kernel template deduces its arguments from the
            // launch's as nvcc deduces them.
            const std::size_t first_argument = source.find_first_not_of(" \t\r\n", open + 1);
            const bool no_arguments = first_argument != std::string_view::npos && source[first_argument] == ')';
            out.resize(start);
            out += "::cugrade::cpu::launcher(";
            out += source.substr(i + 3, close - (i + 3));
            out += ").named(\"" + string_literal_text(name) + "\")";
            out += source.substr(close + 3, open - (close + 3));
            out += "([](auto... cugrade_arguments) { " + name + "(cugrade_arguments...); }";
            out += no_arguments ? "" : ", ";
            i = open;
            continue;
        }
        out += c;
    }
    return dynamic_shared_declarations(out);
}

}  // namespace cugrade
