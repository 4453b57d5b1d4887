#include "authoring/opaque_names.hpp"

#include <fmt/format.h>

#include <cctype>
#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

namespace cugrade {
namespace {

bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Where the quoted literal starting at `at` ends: past its closing quote, or at the end of its line.
std::size_t literal_end(const std::string& text, std::size_t at, char quote) {
    for (++at; at < text.size() && text[at] != quote && text[at] != '\n'; ++at) {
        if (text[at] == '\\') {
            ++at;
        }
    }
    return std::min(at + 1, text.size());
}

std::size_t line_end(const std::string& text, std::size_t at) {
    while (at < text.size() && text[at] != '\n') {
        ++at;
    }
    return at;
}

// A block comment as a space and the line breaks it held.
std::string block_comment_breaks(const std::string& text, std::size_t start, std::size_t stop) {
    std::string breaks(" ");
    for (std::size_t k = start; k < stop; ++k) {
        breaks += text[k] == '\n' ? "\n" : "";
    }
    return breaks;
}

// Where the #include or #pragma line starting at `hash` ends; nothing for another directive, read token by token.
std::optional<std::size_t> kept_directive_end(const std::string& text, std::size_t hash) {
    std::size_t word = hash + 1;
    while (word < text.size() && (text[word] == ' ' || text[word] == '\t')) {
        ++word;
    }
    std::size_t word_end = word;
    while (word_end < text.size() && identifier_char(text[word_end])) {
        ++word_end;
    }
    const std::string_view directive(text.data() + word, word_end - word);
    if (directive != "include" && directive != "pragma") {
        return std::nullopt;
    }
    const std::size_t end = text.find('\n', hash);
    return end == std::string::npos ? text.size() : end;
}

bool number_start(const std::string& text, std::size_t at) {
    return std::isdigit(static_cast<unsigned char>(text[at])) ||
           (text[at] == '.' && at + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[at + 1])));
}

std::size_t number_end(const std::string& text, std::size_t start) {
    std::size_t end = start + 1;
    while (end < text.size() && (identifier_char(text[end]) || text[end] == '.' || text[end] == '\'' ||
                                 ((text[end] == '+' || text[end] == '-') &&
                                  std::string_view("eEpP").find(text[end - 1]) != std::string_view::npos))) {
        ++end;
    }
    return end;
}

std::size_t identifier_end(const std::string& text, std::size_t start) {
    std::size_t end = start + 1;
    while (end < text.size() && identifier_char(text[end])) {
        ++end;
    }
    return end;
}

// A raw string literal: R"delimiter( ... )delimiter", with or without an encoding prefix. Where the one whose prefix
// is `word`, ending at `end`, ends; nothing when `word` starts no raw string.
std::optional<std::size_t> raw_string_end(const std::string& text, const std::string& word, std::size_t end) {
    if (!(end < text.size() && text[end] == '"' && !word.empty() && word.back() == 'R' && word.size() <= 3)) {
        return std::nullopt;
    }
    const std::size_t open = text.find('(', end);
    std::string closing(1, ')');
    closing.append(text, end + 1, open - end - 1);
    closing.push_back('"');
    const std::size_t close = text.find(closing, open);
    return close == std::string::npos ? text.size() : close + closing.size();
}

// Walks C++ text and hands every piece to `emit`: identifiers as such, everything else (whitespace, punctuation,
// literals, numbers, directives kept whole) as plain text. Comments are dropped, leaving their line breaks.
template <class Emit>
void scan(const std::string& text, Emit&& emit) {
    std::size_t i = 0;
    bool line_start = true;
    const auto plain = [&](std::size_t end) {
        emit(false, text.substr(i, end - i));
        i = end;
    };
    while (i < text.size()) {
        const char c = text[i];
        if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
            i = line_end(text, i);
            continue;
        }
        if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
            const std::size_t end = text.find("*/", i + 2);
            const std::size_t stop = end == std::string::npos ? text.size() : end + 2;
            emit(false, block_comment_breaks(text, i, stop));
            i = stop;
            continue;
        }
        if (line_start && c == '#') {
            // #include and #pragma lines as written (their words are not names); other directives token by token.
            if (const auto end = kept_directive_end(text, i)) {
                const std::string line = text.substr(i, *end - i);
                const std::size_t comment = line.find("//");
                emit(false, comment == std::string::npos ? line : line.substr(0, comment));
                i = *end;
                continue;
            }
        }
        if (c == '\n') {
            line_start = true;
            emit(false, "\n");
            ++i;
            continue;
        }
        if (!std::isspace(static_cast<unsigned char>(c))) {
            line_start = false;
        }
        if (c == '"' || c == '\'') {
            plain(literal_end(text, i, c));
        } else if (number_start(text, i)) {
            plain(number_end(text, i));
        } else if (identifier_start(c)) {
            const std::size_t end = identifier_end(text, i);
            const std::string word = text.substr(i, end - i);
            if (const auto stop = raw_string_end(text, word, end)) {
                plain(*stop);
            } else {
                emit(true, word);
                i = end;
            }
        } else {
            plain(i + 1);
        }
    }
}

bool reserved(const std::string& name) {
    return name.rfind("__", 0) == 0 ||
           (name.size() > 1 && name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1])));
}

}  // namespace

std::set<std::string> identifiers_in(const std::string& text) {
    std::set<std::string> names;
    scan(text, [&](bool identifier, const std::string& piece) {
        if (identifier) {
            names.insert(piece);
        }
    });
    return names;
}

OpaqueSource with_opaque_names(const std::string& source, const std::set<std::string>& known) {
    OpaqueSource result;
    std::map<std::string, std::string> opaque;
    scan(source, [&](bool identifier, const std::string& piece) {
        if (!identifier || known.count(piece) != 0 || language_words().count(piece) != 0 || reserved(piece)) {
            result.text += piece;
            return;
        }
        auto [at, added] = opaque.emplace(piece, "");
        if (added) {
            at->second = fmt::format("cugrade_ref_{}", result.renamed.size());
            result.renamed.push_back(piece);
        }
        result.text += at->second;
    });
    return result;
}

const std::set<std::string>& language_words() {
    static const std::set<std::string> words = {
        // C++20
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
        "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
        "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
        "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "final", "float",
        "for", "friend", "goto", "if", "import", "inline", "int", "long", "module", "mutable", "namespace", "new",
        "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "override", "private", "protected", "public",
        "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static", "static_assert",
        "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef",
        "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor",
        "xor_eq",
        // attributes, and the encoding prefixes of literals
        "assume", "carries_dependency", "deprecated", "fallthrough", "likely", "maybe_unused", "nodiscard",
        "no_unique_address", "noreturn", "unlikely", "L", "u", "U", "u8",
        // the preprocessor
        "define", "undef", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "endif", "defined", "line", "error",
        "warning"};
    return words;
}

}  // namespace cugrade
