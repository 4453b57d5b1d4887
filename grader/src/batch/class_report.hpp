// RESULTS/report.html: the class at a glance, one self-contained file (inline SVG and CSS, no script, nothing from
// the network): the score distribution, every student's total, statuses by exercise, each case's pass rate, the
// speed metric of every submission against the tier boundaries, the failure patterns most students share (their
// results' `patterns`), build failures, and groups of byte-identical
// submissions once comments and whitespace are stripped. Every figure comes from the students' results.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cugrade {

struct ClassReportExercise {
    std::string name;
    double max_points = 0.0;
    std::string speed_metric;         // "ratio" or "bandwidth"
    std::vector<double> tier_bounds;  // of the speed scale, best first
};

struct ClassReportStudent {
    std::string id;
    std::string status;                                     // the gradebook's
    double total = 0.0;                                     // the gradebook's, after any penalty
    nlohmann::json results;                                 // results-instructor.json, or null when there are none
    std::map<std::string, std::string> normalised_sources;  // exercise -> graded file without comments and spaces
};

std::string class_report_html(const std::string& title, const std::vector<ClassReportExercise>& exercises,
                              double max_total, const std::vector<ClassReportStudent>& students);

// `source` without its comments and whitespace: two submissions equal under it differ only in those.
std::string strip_comments_and_whitespace(const std::string& source);

}  // namespace cugrade
