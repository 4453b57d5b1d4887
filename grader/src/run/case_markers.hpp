// What a harness process printed, told apart by case: the harness prints a line "MARKER ID" as case ID starts
// (a plan's "case_marker", protocol.hpp), with a marker the submission never sees.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cugrade {

struct MarkedOutput {
    std::map<std::string, std::string> by_case;  // each case's part
    std::vector<std::string> order;              // the ids as their markers came, a job's end marker's among them
    std::string unmarked;                        // the output without the markers
};

MarkedOutput split_at_markers(const std::string& output, const std::string& marker);

}  // namespace cugrade
