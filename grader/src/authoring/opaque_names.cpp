#include "authoring/opaque_names.hpp"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <string_view>

namespace cugrade {
namespace {

bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Walks C++ text and hands every piece to `emit`: identifiers as such, everything else (whitespace, punctuation,
// literals, numbers, directives kept whole) as plain text. Comments are dropped, leaving their line breaks.
template <class Emit>
void scan(const std::string& text, Emit&& emit) {
    std::size_t i = 0;
    bool line_start = true;
    const auto literal_end = [&](std::size_t at, char quote) {
        for (++at; at < text.size() && text[at] != quote && text[at] != '\n'; ++at) {
            if (text[at] == '\\') {
                ++at;
            }
        }
        return std::min(at + 1, text.size());
    };
    while (i < text.size()) {
        const char c = text[i];
        if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
            while (i < text.size() && text[i] != '\n') {
                ++i;
            }
            continue;
        }
        if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
            const std::size_t end = text.find("*/", i + 2);
            const std::size_t stop = end == std::string::npos ? text.size() : end + 2;
            std::string breaks(" ");
            for (std::size_t k = i; k < stop; ++k) {
                breaks += text[k] == '\n' ? "\n" : "";
            }
            emit(false, breaks);
            i = stop;
            continue;
        }
        if (line_start && c == '#') {
            // #include and #pragma lines as written (their words are not names); other directives token by token.
            std::size_t word = i + 1;
            while (word < text.size() && (text[word] == ' ' || text[word] == '\t')) {
                ++word;
            }
            std::size_t word_end = word;
            while (word_end < text.size() && identifier_char(text[word_end])) {
                ++word_end;
            }
            const std::string_view directive(text.data() + word, word_end - word);
            if (directive == "include" || directive == "pragma") {
                std::size_t end = text.find('\n', i);
                end = end == std::string::npos ? text.size() : end;
                const std::string line = text.substr(i, end - i);
                const std::size_t comment = line.find("//");
                emit(false, comment == std::string::npos ? line : line.substr(0, comment));
                i = end;
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
            const std::size_t end = literal_end(i, c);
            emit(false, text.substr(i, end - i));
            i = end;
            continue;
        }
        if (std::isdigit(static_cast<unsigned char>(c)) ||
            (c == '.' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
            std::size_t end = i + 1;
            while (end < text.size() && (identifier_char(text[end]) || text[end] == '.' || text[end] == '\'' ||
                                         ((text[end] == '+' || text[end] == '-') &&
                                          std::string_view("eEpP").find(text[end - 1]) != std::string_view::npos))) {
                ++end;
            }
            emit(false, text.substr(i, end - i));
            i = end;
            continue;
        }
        if (identifier_start(c)) {
            std::size_t end = i + 1;
            while (end < text.size() && identifier_char(text[end])) {
                ++end;
            }
            const std::string word = text.substr(i, end - i);
            // A raw string literal: R"delimiter( ... )delimiter", with or without an encoding prefix.
            if (end < text.size() && text[end] == '"' && !word.empty() && word.back() == 'R' && word.size() <= 3) {
                const std::size_t open = text.find('(', end);
                std::string closing(1, ')');
                closing.append(text, end + 1, open - end - 1);
                closing.push_back('"');
                const std::size_t close = text.find(closing, open);
                const std::size_t stop = close == std::string::npos ? text.size() : close + closing.size();
                emit(false, text.substr(i, stop - i));
                i = stop;
                continue;
            }
            emit(true, word);
            i = end;
            continue;
        }
        emit(false, std::string(1, c));
        ++i;
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
        "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "override", "private", "protected",
        "public", "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
        "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
        "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
        "wchar_t", "while", "xor", "xor_eq",
        // attributes, and the encoding prefixes of literals
        "assume", "carries_dependency", "deprecated", "fallthrough", "likely", "maybe_unused", "nodiscard",
        "no_unique_address", "noreturn", "unlikely", "L", "u", "U", "u8",
        // the preprocessor
        "define", "undef", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "endif", "defined", "line", "error",
        "warning"};
    return words;
}

}  // namespace cugrade
