// Comma-separated values as RFC 4180 writes them: fields quoted when they hold a comma, a quote or a line break,
// quotes doubled. What a roster is read with and a gradebook written with; what is written is never a formula.
#pragma once

#include <string>
#include <vector>

namespace cugrade::csv {

// The rows of `text`. A UTF-8 byte order mark at the start is dropped; CRLF and LF both end a row; a blank line is
// no row. Throws std::runtime_error("line N: ...") for a quote left open.
std::vector<std::vector<std::string>> parse(const std::string& text);

// One row, ended by CRLF (as RFC 4180 and spreadsheet imports expect), each field made a spreadsheet_cell first
// (text_safety.hpp): one line, valid UTF-8, never a formula. Every CSV cugrade writes is made of these rows.
std::string row(const std::vector<std::string>& fields);

}  // namespace cugrade::csv
