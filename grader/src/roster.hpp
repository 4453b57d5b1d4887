// A class roster: a CSV file with a header row naming at least an id column (id, student_id, sid, login or
// username), and optionally name, email and section. Columns are found by name, in any order and case.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cugrade {

struct RosterEntry {
    std::string id;
    std::string name;
    std::string email;
    std::string section;
};

// Throws UsageError naming the file and line: no id column, an empty id, an id listed twice, a broken quote.
std::vector<RosterEntry> read_roster(const std::filesystem::path& file);

}  // namespace cugrade
