// Reading a roster (roster.hpp).
#include "batch/roster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "base/csv.hpp"
#include "base/error.hpp"
#include "base/file_io.hpp"
#include "batch/student_id.hpp"

namespace cugrade {
namespace {

std::string normalised(std::string text) {
    std::string out;
    for (const unsigned char c : text) {
        if (std::isalnum(c)) {
            out += static_cast<char>(std::tolower(c));
        }
    }
    return out;
}

std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string::npos) {
        return "";
    }
    return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// The column of each field the header names (roster.hpp). Two id columns are refused: which one the folders match
// would be a guess.
std::map<std::string, std::size_t> roster_columns(const std::filesystem::path& file,
                                                  const std::vector<std::string>& header) {
    static const std::map<std::string, std::string> column_names = {
        {"id", "id"},       {"studentid", "id"},       {"sid", "id"},         {"login", "id"},
        {"username", "id"}, {"name", "name"},          {"fullname", "name"},  {"studentname", "name"},
        {"email", "email"}, {"emailaddress", "email"}, {"section", "section"}};
    std::map<std::string, std::size_t> column;
    for (std::size_t i = 0; i < header.size(); ++i) {
        const auto known = column_names.find(normalised(header[i]));
        if (known == column_names.end()) {
            continue;
        }
        const auto [first, added] = column.emplace(known->second, i);
        if (!added && known->second == "id") {
            throw UsageError(fmt::format("roster '{}':1: two id columns, '{}' (column {}) and '{}' (column {}): "
                                         "remove or rename one of them",
                                         file.string(), header[first->second], first->second + 1, header[i], i + 1));
        }
    }
    if (!column.contains("id")) {
        throw UsageError(
            fmt::format("roster '{}':1: no id column: name one id, student_id, sid, login or username", file.string()));
    }
    return column;
}

}  // namespace

Roster read_roster(const std::filesystem::path& file) {
    std::vector<std::vector<std::string>> rows;
    try {
        rows = csv::parse(read_file(file));
    } catch (const std::exception& e) {
        throw UsageError(fmt::format("roster '{}': {}", file.string(), e.what()));
    }
    if (rows.empty()) {
        throw UsageError(fmt::format("roster '{}' is empty: it needs a header row with an id column", file.string()));
    }
    const std::map<std::string, std::size_t> column = roster_columns(file, rows[0]);
    const auto cell = [&](const std::vector<std::string>& row, const char* name) {
        const auto at = column.find(name);
        return at == column.end() || at->second >= row.size() ? std::string() : trimmed(row[at->second]);
    };
    Roster roster;
    std::set<std::string> seen;
    for (std::size_t r = 1; r < rows.size(); ++r) {
        RosterEntry entry{cell(rows[r], "id"), cell(rows[r], "name"), cell(rows[r], "email"), cell(rows[r], "section")};
        if (entry.id.empty()) {
            throw UsageError(fmt::format("roster '{}':{}: a row without an id", file.string(), r + 1));
        }
        if (!usable_id(entry.id)) {
            roster.warnings.push_back(fmt::format("roster '{}':{}: id '{}' is not usable as a student id ({}): row "
                                                  "left out",
                                                  file.string(), r + 1, entry.id, usable_id_rule));
            continue;
        }
        if (!seen.insert(entry.id).second) {
            throw UsageError(fmt::format("roster '{}':{}: id '{}' is listed twice", file.string(), r + 1, entry.id));
        }
        roster.entries.push_back(std::move(entry));
    }
    return roster;
}

}  // namespace cugrade
