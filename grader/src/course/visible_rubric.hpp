// A rubric as a student kit holds it: its hidden groups gone entirely (names, sizes, seeds, points), the speed test
// gone too when it is hidden, and the input distributions that only those used gone with them.
#pragma once

#include <filesystem>
#include <string>

namespace cugrade {

// The YAML text of `rubric_file`'s visible part, with a comment that says so. Throws FileError when the rubric cannot
// be read.
std::string visible_rubric_text(const std::filesystem::path& rubric_file);

}  // namespace cugrade
