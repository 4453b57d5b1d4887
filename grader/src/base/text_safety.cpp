#include "base/text_safety.hpp"

#include <algorithm>
#include <regex>
#include <string_view>

namespace cugrade {

std::string valid_utf8(const std::string& text) {
    std::string result;
    result.reserve(text.size());
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    std::size_t i = 0;
    while (i < text.size()) {
        const unsigned char c = byte(i);
        std::size_t length = 0;
        unsigned min = 0;
        if (c < 0x80) {
            length = 1;
        } else if (c >= 0xC2 && c <= 0xDF) {
            length = 2;
            min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            length = 3;
            min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            length = 4;
            min = 0x10000;
        }
        bool valid = length > 0 && i + length <= text.size();
        unsigned code = length == 1 ? c : length == 2 ? c & 0x1Fu : length == 3 ? c & 0x0Fu : c & 0x07u;
        for (std::size_t k = 1; valid && k < length; ++k) {
            valid = (byte(i + k) & 0xC0) == 0x80;
            code = (code << 6) | (byte(i + k) & 0x3Fu);
        }
        valid = valid && (length == 1 || (code >= min && code <= 0x10FFFF && (code < 0xD800 || code > 0xDFFF)));
        if (valid) {
            result.append(text, i, length);
            i += length;
        } else {
            result += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return result;
}

namespace {

// valid_utf8, and every control character (C0, DEL, C1) becomes U+FFFD, except newline and tab where `keep_lines`.
std::string without_controls(const std::string& text, bool keep_lines) {
    const std::string valid = valid_utf8(text);
    std::string result;
    result.reserve(valid.size());
    for (std::size_t i = 0; i < valid.size(); ++i) {
        const auto c = static_cast<unsigned char>(valid[i]);
        const bool c1 = c == 0xC2 && i + 1 < valid.size() && static_cast<unsigned char>(valid[i + 1]) >= 0x80 &&
                        static_cast<unsigned char>(valid[i + 1]) <= 0x9F;
        const bool kept_line = keep_lines && (c == '\n' || c == '\t');
        if ((c < 0x20 && !kept_line) || c == 0x7F) {
            result += "\xEF\xBF\xBD";
        } else if (c1) {
            result += "\xEF\xBF\xBD";
            ++i;
        } else {
            result += valid[i];
        }
    }
    return result;
}

// A decimal number as cugrade writes points and days: an optional minus, digits, and an optional fraction. A
// spreadsheet reads it as that number and nothing else.
bool plain_number(const std::string& text) {
    static const std::regex number("-?[0-9]+(\\.[0-9]+)?");
    return std::regex_match(text, number);
}

}  // namespace

std::string terminal_text(const std::string& text) { return without_controls(text, true); }

std::string line_text(const std::string& text) { return without_controls(text, false); }

std::string spreadsheet_cell(const std::string& text) {
    std::string cell = line_text(text);
    // Tab and carriage return, OWASP's other two, are already U+FFFD.
    const bool formula_start = !cell.empty() && std::string_view("=+-@").find(cell.front()) != std::string_view::npos;
    return formula_start && !plain_number(cell) ? "'" + cell : cell;
}

std::string markdown_text(const std::string& text) {
    const std::string line = line_text(text);
    const std::size_t leading_digits = std::min(line.find_first_not_of("0123456789"), line.size());
    std::string out;
    out.reserve(line.size());
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        // Anywhere: what opens inline markup, a link, raw HTML, an entity or a table cell. At the start: what opens
        // a heading, a list item, a quote or a setext underline.
        const bool inline_markup = std::string_view("\\`*_[]<>|~&").find(c) != std::string_view::npos;
        const bool block_start = i == 0 && std::string_view("#+-=").find(c) != std::string_view::npos;
        const bool ordered_item = i > 0 && i == leading_digits && (c == '.' || c == ')');
        if (inline_markup || block_start || ordered_item) {
            out += '\\';
        }
        out += c;
    }
    return out;
}

nlohmann::json valid_json_text(const nlohmann::json& json) {
    if (json.is_string()) {
        return valid_utf8(json.get_ref<const std::string&>());
    }
    if (json.is_array()) {
        nlohmann::json result = nlohmann::json::array();
        for (const auto& item : json) {
            result.push_back(valid_json_text(item));
        }
        return result;
    }
    if (json.is_object()) {
        nlohmann::json result = nlohmann::json::object();
        for (const auto& [key, value] : json.items()) {
            result[valid_utf8(key)] = valid_json_text(value);
        }
        return result;
    }
    return json;
}

std::string markup_text(const std::string& raw) {
    std::string out;
    for (const char ch : valid_utf8(raw)) {
        switch (ch) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default:
                if (static_cast<unsigned char>(ch) >= 0x20 || ch == '\t' || ch == '\n' || ch == '\r') {
                    out += ch;
                }
        }
    }
    return out;
}

}  // namespace cugrade
