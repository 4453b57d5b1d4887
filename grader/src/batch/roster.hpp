// A class roster: a CSV file with a header row naming one id column (id, student_id, sid, login or username), and
// optionally name, email and section. Columns are found by name, in any order and case. An id follows the rule of
// a student's folder (student_id.hpp).
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

struct Roster {
    std::vector<RosterEntry> entries;
    std::vector<std::string> warnings;  // rows left out, with the file and line: an id no folder can have
};

// Throws UsageError naming the file and line: no id column or two, an empty id, an id listed twice, a broken quote.
Roster read_roster(const std::filesystem::path& file);

}  // namespace cugrade
