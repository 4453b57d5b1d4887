// What may be a student's id (student_id.hpp).
#include "batch/student_id.hpp"

#include <algorithm>

namespace cugrade {
namespace {

// ASCII alone: std::isalnum follows the locale, and an id must mean the same file name everywhere.
bool ascii_alnum(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

const char* const usable_id_rule = "letters, digits and - _ . @ +, starting with a letter, digit or _";

bool usable_id(const std::string& id) {
    if (id.empty() || id.size() > 128 || !(ascii_alnum(static_cast<unsigned char>(id.front())) || id.front() == '_')) {
        return false;
    }
    return std::all_of(id.begin(), id.end(), [](unsigned char c) {
        return ascii_alnum(c) || c == '-' || c == '_' || c == '.' || c == '@' || c == '+';
    });
}

}  // namespace cugrade
