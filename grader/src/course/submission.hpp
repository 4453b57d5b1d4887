// A student's file as cugrade grades it: read once, from the student's folder, without following a link out of it.
// Git clones and zip archives keep symbolic links: a `sum.cu` that links to the course's reference or to a system
// file is refused, with the reason, rather than graded or shown in compiler messages.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace cugrade {

inline constexpr std::size_t max_submission_bytes = std::size_t{1} << 20;

struct SubmissionFile {
    std::filesystem::path shown;         // the path as the user gave it: "student/sum.cu"
    std::string name;                    // "sum.cu"
    std::string bytes;                   // the contents, when not refused
    std::optional<std::string> refused;  // why the file is not graded: a link out of the folder, not a file, too big
};

// Whether the folder holds anything by that name (a link or a folder too), so that a refused file is reported
// rather than silently ignored.
bool submission_present(const std::filesystem::path& folder, const std::string& name);

// Reads FOLDER/NAME. A link is followed only when it leads to a regular file inside the folder. Throws nothing: a
// file that cannot be graded comes back with `refused` set.
SubmissionFile read_submission(const std::filesystem::path& folder, const std::string& name);

}  // namespace cugrade
