// Writing results as JSON (--json): to standard output for "-", else to a regular file that is replaced whole.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace cugrade {

// The text of `json`, two spaces an indent. Text that is not valid UTF-8 has already been made valid by whoever
// built the JSON (valid_utf8); what may still slip through becomes U+FFFD rather than an error.
std::string json_text(const nlohmann::json& json);

// Writes `json` to `destination`: "-" is `standard_output`; anything else must be a regular file or not exist yet.
// The text goes to a new file beside it, which is then renamed into place, so no reader sees half a file and no
// link, device or named pipe at that name is written through. Throws UsageError with the reason.
void write_json_file(const std::string& destination, const nlohmann::json& json, std::ostream& standard_output);

}  // namespace cugrade
