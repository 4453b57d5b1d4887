// Text from untrusted places (a submission's output, its compiler's messages, its file's name, a student's name or
// email, a roster's cells, an archive's entry names) made safe for where it goes: valid UTF-8 for JSON, no control
// sequences for a terminal, no formula for a spreadsheet, no markup for Markdown. Every output format goes through
// these.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace cugrade {

// Makes a text valid UTF-8 (a Latin-1 comment near an error, output cut mid-character): each byte that is not part
// of a valid sequence becomes U+FFFD.
std::string valid_utf8(const std::string& text);

// valid_utf8, and every control character but newline and tab becomes U+FFFD: a program's output cannot move the
// cursor, clear the screen or retitle the terminal of the person reading the report.
std::string terminal_text(const std::string& text);

// valid_utf8, and every control character, newline and tab included, becomes U+FFFD: one line that cannot add a line
// of its own to a line-based file (key.txt) or move a terminal's cursor.
std::string line_text(const std::string& text);

// One cell of a CSV file a spreadsheet will open (gradebook.csv, gradebook-canvas.csv): line_text, and a cell that
// begins with = + - or @ (OWASP's formula characters; tab and carriage return are U+FFFD by then) gets a ' in front,
// so that Excel, LibreOffice and Google Sheets show it as text, unless the whole cell is a decimal number ("-1.5"),
// which a spreadsheet reads as that number alone. csv::row applies it to every field.
std::string spreadsheet_cell(const std::string& text);

// Text inside a Markdown line (feedback.md): line_text, and a backslash before each character that opens inline
// markup, a link, raw HTML, an entity or a table cell (\ ` * _ [ ] < > | ~ &), and before one that would open a
// heading, list item or setext underline at the start (# + - =, digits then . or )). A name cannot end the line,
// start a block or split a table's cell.
std::string markdown_text(const std::string& text);

// Text for XML and HTML (JUnit files, the class report): valid_utf8, the five special characters escaped, and the
// control characters XML 1.0 cannot hold dropped.
std::string markup_text(const std::string& text);

// valid_utf8 applied to every string of a JSON document, keys included.
nlohmann::json valid_json_text(const nlohmann::json& json);

}  // namespace cugrade
