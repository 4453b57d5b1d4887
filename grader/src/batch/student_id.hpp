// What may be a student's id: one rule for the folders of a class, a Gradescope export's submitters and a roster.
#pragma once

#include <string>

namespace cugrade {

// The rule in words, for messages: "letters, digits and - _ . @ +, starting with a letter, digit or _".
extern const char* const usable_id_rule;

// Whether `id` is usable in file names and CSV cells: no hidden folders, nothing a shell or a path would read
// differently, no first character a spreadsheet takes for a formula, ASCII only, at most 128 characters.
bool usable_id(const std::string& id);

}  // namespace cugrade
