// Reading a roster (roster.hpp).
#include "roster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "csv.hpp"
#include "cugrade/error.hpp"
#include "file_io.hpp"

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

}  // namespace

std::vector<RosterEntry> read_roster(const std::filesystem::path& file) {
    std::vector<std::vector<std::string>> rows;
    try {
        rows = csv::parse(read_file(file));
    } catch (const std::exception& e) {
        throw UsageError(fmt::format("roster '{}': {}", file.string(), e.what()));
    }
    if (rows.empty()) {
        throw UsageError(fmt::format("roster '{}' is empty: it needs a header row with an id column", file.string()));
    }
    static const std::map<std::string, std::string> column_names = {
        {"id", "id"},       {"studentid", "id"}, {"sid", "id"},       {"login", "id"},  {"username", "id"},
        {"name", "name"},   {"fullname", "name"}, {"studentname", "name"}, {"email", "email"},
        {"emailaddress", "email"}, {"section", "section"}};
    std::map<std::string, std::size_t> column;
    for (std::size_t i = 0; i < rows[0].size(); ++i) {
        if (const auto known = column_names.find(normalised(rows[0][i])); known != column_names.end()) {
            column.emplace(known->second, i);
        }
    }
    if (!column.contains("id")) {
        throw UsageError(fmt::format("roster '{}':1: no id column: name one id, student_id, sid, login or username",
                                     file.string()));
    }
    const auto cell = [&](const std::vector<std::string>& row, const char* name) {
        const auto at = column.find(name);
        return at == column.end() || at->second >= row.size() ? std::string() : trimmed(row[at->second]);
    };
    std::vector<RosterEntry> entries;
    std::set<std::string> seen;
    for (std::size_t r = 1; r < rows.size(); ++r) {
        RosterEntry entry{cell(rows[r], "id"), cell(rows[r], "name"), cell(rows[r], "email"), cell(rows[r], "section")};
        if (entry.id.empty()) {
            throw UsageError(fmt::format("roster '{}':{}: a row without an id", file.string(), r + 1));
        }
        if (!seen.insert(entry.id).second) {
            throw UsageError(fmt::format("roster '{}':{}: id '{}' is listed twice", file.string(), r + 1, entry.id));
        }
        entries.push_back(std::move(entry));
    }
    return entries;
}

}  // namespace cugrade
