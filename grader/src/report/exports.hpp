// A student's report in the forms a course hands on: feedback for the student (Markdown), Gradescope's
// results.json, and JUnit XML. Each shows cases through shown_cases (report.hpp): a hidden case keeps its verdict
// and points, nothing else.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace cugrade {

// What `cugrade check` prints, as Markdown, hidden cases masked, after the row's `notes` (each a list item, as
// markdown_text: a file's name cannot break the document).
std::string feedback_markdown(const Report& report, const std::vector<std::string>& notes);

// Gradescope's autograder results (score, output, tests with name, score, max_score, status, output, visibility).
// Hidden cases are `after_published`: the student sees their verdicts once the instructor publishes grades.
nlohmann::json gradescope_results(const Report& report, const std::vector<std::string>& notes);

// One <testsuite> per exercise, one <testcase> per case: failures, errors and skips as JUnit readers expect.
std::string junit_xml(const Report& report);

}  // namespace cugrade
