// Submissions that differ only in their comments compile to the same program: a batch reads a slow speed test's
// counters once for all of them (same_code_profiles.hpp). What tells them apart is the source as the compiler reads it
// before any macro: its comments gone, every line where it was (so a line a diagnosis names is the same line in each).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/sandbox.hpp"

namespace cugrade {

// Writes `source` (a file in `dir`) without its comments to `written` in `dir`, through the host compiler's
// preprocessor on input it takes as preprocessed already (g++ -fpreprocessed): it knows C++'s strings, raw strings
// and line splices as the compiler does, expands no macro and reads no other file. False where it could not (no g++,
// its limit of `seconds`): the submission then shares nothing with any other.
bool write_code_without_comments(const std::filesystem::path& dir, const std::string& source,
                                 const std::string& written, double seconds, const SandboxPolicy& sandbox,
                                 std::vector<std::pair<std::string, std::string>> environment);

}  // namespace cugrade
