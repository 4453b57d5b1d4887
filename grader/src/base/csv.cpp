// Comma-separated values (csv.hpp).
#include "base/csv.hpp"

#include <stdexcept>

#include "base/text_safety.hpp"

namespace cugrade::csv {

std::vector<std::vector<std::string>> parse(const std::string& input) {
    const std::string text = input.rfind("\xEF\xBB\xBF", 0) == 0 ? input.substr(3) : input;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    bool row_has_content = false;
    std::size_t line = 1, quote_line = 0;
    const auto end_row = [&] {
        if (row_has_content || !fields.empty()) {
            fields.push_back(field);
            rows.push_back(fields);
        }
        fields.clear();
        field.clear();
        row_has_content = false;
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                line += c == '\n';
                field += c;
            }
        } else if (c == '"') {
            quoted = true;
            quote_line = line;
            row_has_content = true;
        } else if (c == ',') {
            fields.push_back(field);
            field.clear();
            row_has_content = true;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
                ++i;
            }
            end_row();
            ++line;
        } else {
            field += c;
            row_has_content = true;
        }
    }
    if (quoted) {
        throw std::runtime_error("line " + std::to_string(quote_line) + ": a quoted field is never closed");
    }
    end_row();
    return rows;
}

std::string row(const std::vector<std::string>& fields) {
    std::string out;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i > 0) {
            out += ',';
        }
        const std::string f = spreadsheet_cell(fields[i]);
        if (f.find_first_of(",\"\r\n") == std::string::npos) {
            out += f;
            continue;
        }
        out += '"';
        for (const char c : f) {
            out += c;
            if (c == '"') {
                out += '"';
            }
        }
        out += '"';
    }
    return out + "\r\n";
}

}  // namespace cugrade::csv
