// Text from untrusted places (a submission's output, its compiler's messages, its file's name) made safe for where it
// goes: valid UTF-8 for JSON, and no control sequences for a terminal. Every output format goes through these.
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

// Text for XML and HTML (JUnit files, the class report): valid_utf8, the five special characters escaped, and the
// control characters XML 1.0 cannot hold dropped.
std::string markup_text(const std::string& text);

// valid_utf8 applied to every string of a JSON document, keys included.
nlohmann::json valid_json_text(const nlohmann::json& json);

}  // namespace cugrade
