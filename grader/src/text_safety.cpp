#include "text_safety.hpp"

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

std::string terminal_text(const std::string& text) {
    const std::string valid = valid_utf8(text);
    std::string result;
    result.reserve(valid.size());
    for (std::size_t i = 0; i < valid.size(); ++i) {
        const auto c = static_cast<unsigned char>(valid[i]);
        const bool c1 = c == 0xC2 && i + 1 < valid.size() && static_cast<unsigned char>(valid[i + 1]) >= 0x80 &&
                        static_cast<unsigned char>(valid[i + 1]) <= 0x9F;
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
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
