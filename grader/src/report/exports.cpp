// A student's report for the course's other tools (exports.hpp).
#include "report/exports.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "base/status.hpp"
#include "base/text_safety.hpp"

namespace cugrade {
namespace {

const ReportOptions student_view{};

std::string report_text(const Report& report) {
    std::ostringstream text;
    ReportOptions options = student_view;
    options.width = 100;
    print_report(text, report, options);
    return text.str();
}

// A fence longer than any run of backticks in `text`, so that nothing the program printed closes it.
std::string fence_for(const std::string& text) {
    std::size_t longest = 0, run = 0;
    for (const char c : text) {
        run = c == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

// The row's notes (files not graded, and why) as a Markdown list: each note one item, whatever names it holds.
std::string notes_markdown(const std::vector<std::string>& notes) {
    std::string list;
    for (const auto& note : notes) {
        list += "- " + markdown_text(note) + "\n";
    }
    return list;
}

// The same notes as plain text, for Gradescope's output.
std::string notes_text(const std::vector<std::string>& notes) {
    std::string list;
    for (const auto& note : notes) {
        list += (list.empty() ? "- " : "\n- ") + line_text(note);
    }
    return list;
}

std::string case_score_status(const ScoredCase& c) {
    return c.status == Status::passed || (c.plan.max_points > 0 && c.points >= c.plan.max_points) ? "passed" : "failed";
}

}  // namespace

std::string feedback_markdown(const Report& report, const std::vector<std::string>& notes) {
    std::string md = fmt::format("# cugrade feedback\n\n**{} / {} points**\n\n", format_points(report.points()),
                                 format_points(report.max_points()));
    if (!notes.empty()) {
        md += notes_markdown(notes) + "\n";
    }
    const std::string text = report_text(report);
    const std::string fence = fence_for(text);
    md += fence + "text\n" + text + (text.empty() || text.back() == '\n' ? "" : "\n") + fence + "\n";
    return md;
}

nlohmann::json gradescope_results(const Report& report, const std::vector<std::string>& notes) {
    nlohmann::json tests = nlohmann::json::array();
    for (const auto& exercise : report.exercises) {
        const auto shown = shown_cases(exercise, student_view);
        for (std::size_t i = 0; i < exercise.cases.size(); ++i) {
            const ScoredCase& c = exercise.cases[i];
            std::string output = to_string(c.status);
            if (!shown[i].detail.empty()) {
                output += ": " + shown[i].detail;
            }
            if (shown[i].diagnosis) {
                const Diagnosis& diagnosis = *shown[i].diagnosis;
                output.append("\n").append(diagnosis_cause(diagnosis));
                if (!diagnosis.map.empty()) {
                    output.append("\nwhere the wrong elements lie:");
                    for (const auto& line : diagnosis.map) {
                        output.append("\n  ").append(line);
                    }
                }
                if (!diagnosis.hint.empty()) {
                    output.append("\nlikely: ").append(diagnosis.hint);
                }
            }
            tests.push_back({{"name", exercise.exercise + " " + shown[i].name},
                             {"score", c.points},
                             {"max_score", c.plan.max_points},
                             {"status", case_score_status(c)},
                             {"output", output},
                             {"visibility", shown[i].hidden ? "after_published" : "visible"}});
        }
        if (exercise.error) {
            tests.push_back({{"name", exercise.exercise + " (grading)"},
                             {"score", 0},
                             {"max_score", 0},
                             {"status", "failed"},
                             {"output", "cugrade could not grade this exercise: " + *exercise.error},
                             {"visibility", "visible"}});
        }
    }
    const std::string output = notes.empty() ? report_text(report) : notes_text(notes) + "\n\n" + report_text(report);
    return valid_json_text({{"score", report.points()},
                            {"max_score", report.max_points()},
                            {"output", output},
                            {"visibility", "visible"},
                            {"stdout_visibility", "hidden"},
                            {"tests", tests}});
}

std::string junit_xml(const Report& report) {
    std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"cugrade\">\n";
    for (const auto& exercise : report.exercises) {
        const auto shown = shown_cases(exercise, student_view);
        std::size_t failures = 0, errors = 0, skipped = 0;
        std::string cases;
        for (std::size_t i = 0; i < exercise.cases.size(); ++i) {
            const ScoredCase& c = exercise.cases[i];
            cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", markup_text(exercise.exercise),
                                 markup_text(shown[i].name));
            const std::string message = markup_text(to_string(c.status));
            const std::string detail = markup_text(shown[i].detail);
            if (c.status == Status::skipped) {
                ++skipped;
                cases += fmt::format("      <skipped message=\"{}\"/>\n", detail.empty() ? message : detail);
            } else if (c.status == Status::harness_error) {
                ++errors;
                cases += fmt::format("      <error message=\"{}\">{}</error>\n", message, detail);
            } else if (case_score_status(c) == "failed") {
                ++failures;
                cases += fmt::format("      <failure message=\"{}\">{}</failure>\n", message, detail);
            }
            cases += "    </testcase>\n";
        }
        if (exercise.error) {
            ++errors;
            cases += fmt::format("    <testcase classname=\"{0}\" name=\"grading\">\n      <error message=\"{1}\">{1}"
                                 "</error>\n    </testcase>\n",
                                 markup_text(exercise.exercise), markup_text(*exercise.error));
        }
        xml += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
                           markup_text(exercise.exercise), exercise.cases.size() + (exercise.error ? 1 : 0), failures,
                           errors, skipped);
        xml += cases + "  </testsuite>\n";
    }
    return xml + "</testsuites>\n";
}

}  // namespace cugrade
