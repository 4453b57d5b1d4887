// The class report (class_report.hpp).
#include "batch/class_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "score/score.hpp"
#include "base/text_safety.hpp"

namespace cugrade {
namespace {

// A bar chart of `counts` under `labels`, as inline SVG.
std::string bar_chart(const std::vector<std::size_t>& counts, const std::vector<std::string>& labels,
                      const std::string& caption) {
    const std::size_t most = std::max<std::size_t>(1, *std::max_element(counts.begin(), counts.end()));
    const int bar = 48, gap = 8, height = 160, base = height + 20;
    std::string svg = fmt::format("<svg role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{}\">",
                                  markup_text(caption), counts.size() * (bar + gap) + gap, base + 30);
    for (std::size_t i = 0; i < counts.size(); ++i) {
        const int h = static_cast<int>(std::lround(static_cast<double>(counts[i]) / most * height));
        const std::size_t x = gap + i * (bar + gap);
        svg +=
            fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#4a7ab8\"/>", x, base - h, bar, h);
        svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\">{}</text>", x + bar / 2,
                           base - h - 4, counts[i]);
        svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>", x + bar / 2,
                           base + 16, markup_text(labels[i]));
    }
    return svg + "</svg>";
}

// A table of how many students each text fits, the commonest first; "None." when empty.
std::string count_table(const char* css_class, const char* what, const std::map<std::string, std::size_t>& counts) {
    if (counts.empty()) {
        return "<p>None.</p>\n";
    }
    std::vector<std::pair<std::string, std::size_t>> common(counts.begin(), counts.end());
    std::stable_sort(common.begin(), common.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string table = fmt::format("<table class=\"{}\"><tr><th>{}</th><th>students</th></tr>\n", css_class, what);
    for (const auto& [text, count] : common) {
        table += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", markup_text(text), count);
    }
    return table + "</table>\n";
}

// Each submission's speed figure as a dot on a logarithmic axis, the tier boundaries as dashed lines.
std::string speed_plot(const std::vector<std::pair<std::string, double>>& values, const std::vector<double>& bounds,
                       const std::string& metric) {
    std::vector<double> all;
    for (const auto& [id, value] : values) {
        all.push_back(value);
    }
    all.insert(all.end(), bounds.begin(), bounds.end());
    if (all.empty()) {
        return "<p>No speed figures.</p>";
    }
    const double low = std::log10(*std::min_element(all.begin(), all.end()) * 0.8);
    const double high = std::log10(*std::max_element(all.begin(), all.end()) * 1.25);
    const int width = 640, left = 20, top = 20, height = 60;
    const auto x = [&](double v) { return left + (std::log10(v) - low) / std::max(1e-9, high - low) * width; };
    std::string svg = fmt::format("<svg role=\"img\" aria-label=\"speed ({})\" width=\"{}\" height=\"{}\">",
                                  markup_text(metric), width + 2 * left, top + height + 40);
    svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>", left, top + height,
                       left + width, top + height);
    for (const double bound : bounds) {
        svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#c33\" "
                           "stroke-dasharray=\"4 3\"/><text x=\"{0:.1f}\" y=\"{3}\" font-size=\"11\" "
                           "text-anchor=\"middle\" fill=\"#c33\">{4}</text>",
                           x(bound), top, top + height, top + height + 14, fmt::format("{:g}", bound));
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{}\" r=\"4\" fill=\"#4a7ab8\" fill-opacity=\"0.7\">"
                           "<title>{}: {:.3g}</title></circle>",
                           x(values[i].second), top + 10 + (i * 7) % (height - 20), markup_text(values[i].first),
                           values[i].second);
    }
    return svg + "</svg>";
}

std::string page_head(const std::string& title) {
    return fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title>\n"
        "<style>body{{font-family:sans-serif;margin:2em;max-width:60em}}table{{border-collapse:collapse;margin:1em 0}}"
        "td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}td:first-child,th:first-child"
        "{{text-align:left}}h2{{margin-top:2em}}</style></head><body>\n<h1>{0}</h1>\n",
        markup_text(title));
}

// The score distribution, then every student's total.
std::string scores_section(double max_total, const std::vector<ClassReportStudent>& students) {
    // The score distribution, in tenths of the points possible.
    std::vector<std::size_t> bins(10, 0);
    for (const auto& s : students) {
        const double fraction = max_total > 0 ? s.total / max_total : 0.0;
        bins[std::min<std::size_t>(9, static_cast<std::size_t>(std::max(0.0, fraction) * 10))]++;
    }
    std::vector<std::string> labels;
    for (int b = 0; b < 10; ++b) {
        labels.push_back(fmt::format("{}–{}%", b * 10, b * 10 + 10));
    }
    std::string section = fmt::format("<h2>Scores</h2>\n<p>{} students, out of {} points.</p>\n{}\n", students.size(),
                                      format_points(max_total), bar_chart(bins, labels, "score distribution"));
    section += "<table id=\"totals\"><tr><th>student</th><th>total</th><th>status</th></tr>\n";
    for (const auto& s : students) {
        section += fmt::format("<tr data-id=\"{0}\"><td>{0}</td><td class=\"total\">{1}</td><td>{2}</td></tr>\n",
                               markup_text(s.id), format_points(s.total), markup_text(s.status));
    }
    return section + "</table>\n";
}

// What an exercise's section shows, counted over the students.
struct ExerciseTally {
    std::map<std::string, std::size_t> statuses;
    std::vector<std::string> case_order;
    std::map<std::string, std::pair<std::size_t, std::size_t>> rates;  // case -> (correct, graded)
    std::vector<std::pair<std::string, double>> speeds;
    std::vector<std::string> build_failures;
    std::map<std::string, std::vector<std::string>> identical;
    std::map<std::string, std::size_t> patterns;  // summary -> students it fits
    std::map<std::string, std::size_t> causes;    // a case's diagnosis, by category -> students it fits
};

// The student's results for `exercise` (the last entry of that name), or null where it was not graded.
const nlohmann::json* graded_exercise(const ClassReportStudent& s, const std::string& exercise) {
    const nlohmann::json* graded = nullptr;
    if (s.results.is_object() && s.results.contains("exercises") && s.results["exercises"].is_array()) {
        for (const auto& e : s.results["exercises"]) {
            if (e.is_object() && e.value("exercise", "") == exercise) {
                graded = &e;
            }
        }
    }
    return graded;
}

void count_status(ExerciseTally& tally, const std::string& id, const nlohmann::json& graded) {
    const auto& build = graded.value("build", nlohmann::json::object());
    const bool built = build.value("ok", false) || !build.value("attempted", true);
    if (graded.contains("error") && graded["error"].is_string()) {
        ++tally.statuses["error"];
    } else if (!built) {
        ++tally.statuses["build failed"];
        tally.build_failures.push_back(id);
    } else {
        ++tally.statuses[graded.value("outcome", "graded")];
    }
}

void count_cases(ExerciseTally& tally, const ClassReportExercise& exercise, const std::string& student,
                 const nlohmann::json& graded) {
    for (const auto& c : graded.value("cases", nlohmann::json::array())) {
        const std::string id = c.value("id", "");
        if (!tally.rates.contains(id)) {
            tally.case_order.push_back(id);
        }
        const std::string status = c.value("status", "");
        tally.rates[id].first += status == "passed" || status == "slow";
        tally.rates[id].second += status != "skipped";
        const auto& m = c.value("measurements", nlohmann::json::object());
        const char* key = exercise.speed_metric == "bandwidth" ? "copy_fraction" : "ratio";
        if (m.contains(key) && m[key].is_number()) {
            tally.speeds.emplace_back(student, m[key].get<double>());
        }
    }
}

// Each cause and each pattern counted once for the student.
void count_causes_and_patterns(ExerciseTally& tally, const nlohmann::json& graded) {
    std::set<std::string> student_causes;
    for (const auto& c : graded.value("cases", nlohmann::json::array())) {
        const auto& diagnosis = c.value("diagnosis", nlohmann::json());
        // A diagnosis that only describes (where a matrix's wrong elements lie) has no category to count.
        if (diagnosis.is_object() && diagnosis.contains("category") && diagnosis["category"].is_string() &&
            !diagnosis["category"].get<std::string>().empty()) {
            student_causes.insert(diagnosis["category"].get<std::string>());
        }
    }
    for (const auto& cause : student_causes) {
        ++tally.causes[cause];
    }
    for (const auto& pattern : graded.value("patterns", nlohmann::json::array())) {
        if (pattern.is_object() && pattern.contains("summary") && pattern["summary"].is_string()) {
            ++tally.patterns[pattern["summary"].get<std::string>()];
        }
    }
}

ExerciseTally tally_exercise(const ClassReportExercise& exercise, const std::vector<ClassReportStudent>& students) {
    ExerciseTally tally;
    for (const auto& s : students) {
        const nlohmann::json* graded = graded_exercise(s, exercise.name);
        if (graded == nullptr) {
            ++tally.statuses["not graded"];
            continue;
        }
        count_status(tally, s.id, *graded);
        count_cases(tally, exercise, s.id, *graded);
        count_causes_and_patterns(tally, *graded);
        if (const auto source = s.normalised_sources.find(exercise.name); source != s.normalised_sources.end()) {
            tally.identical[source->second].push_back(s.id);
        }
    }
    return tally;
}

std::string exercise_section(const ClassReportExercise& exercise, const ExerciseTally& tally) {
    std::string page = fmt::format("<h2>{}</h2>\n", markup_text(exercise.name));
    page += "<h3>Statuses</h3>\n<table class=\"statuses\"><tr><th>status</th><th>students</th></tr>\n";
    for (const auto& [status, count] : tally.statuses) {
        page += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", markup_text(status), count);
    }
    page += "</table>\n<h3>Pass rate of each case</h3>\n<table class=\"rates\"><tr><th>case</th><th>correct</th>"
            "<th>graded</th><th>rate</th></tr>\n";
    for (const auto& id : tally.case_order) {
        const auto [correct, graded] = tally.rates.at(id);
        page += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", markup_text(id), correct, graded,
                            graded > 0 ? fmt::format("{:.0f}%", 100.0 * correct / graded) : "–");
    }
    page += fmt::format("</table>\n<h3>Speed ({})</h3>\n{}\n",
                        exercise.speed_metric == "bandwidth" ? "fraction of the copy bandwidth"
                                                             : "time as a multiple of the reference's",
                        speed_plot(tally.speeds, exercise.tier_bounds, exercise.speed_metric));
    page += "<h3>What failing submissions share</h3>\n" + count_table("patterns", "pattern", tally.patterns);
    page += "<h3>Most common diagnoses</h3>\n" + count_table("diagnoses", "cause", tally.causes);
    page += "<h3>Build failures</h3>\n";
    page += tally.build_failures.empty()
                ? std::string("<p>None.</p>\n")
                : fmt::format("<p class=\"build-failures\">{}</p>\n",
                              markup_text(fmt::format("{}", fmt::join(tally.build_failures, ", "))));
    page += "<h3>Identical submissions (comments and whitespace aside)</h3>\n";
    bool any = false;
    for (const auto& [source, ids] : tally.identical) {
        if (ids.size() > 1) {
            page +=
                fmt::format("<p class=\"identical\">{}</p>\n", markup_text(fmt::format("{}", fmt::join(ids, ", "))));
            any = true;
        }
    }
    if (!any) {
        page += "<p>None.</p>\n";
    }
    return page;
}

}  // namespace

std::string strip_comments_and_whitespace(const std::string& source) {
    std::string out;
    for (std::size_t i = 0; i < source.size(); ++i) {
        const char c = source[i];
        if (c == '"' || c == '\'') {  // a literal is kept whole: its spaces and slashes are not comments
            const char quote = c;
            out += c;
            for (++i; i < source.size() && source[i] != quote && source[i] != '\n'; ++i) {
                out += source[i];
                if (source[i] == '\\' && i + 1 < source.size()) {
                    out += source[++i];
                }
            }
            if (i < source.size()) {
                out += source[i];
            }
        } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
            while (i < source.size() && source[i] != '\n') {
                ++i;
            }
        } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '*') {
            const auto end = source.find("*/", i + 2);
            i = end == std::string::npos ? source.size() : end + 1;
        } else if (!std::isspace(static_cast<unsigned char>(c))) {
            out += c;
        }
    }
    return out;
}

std::string class_report_html(const std::string& title, const std::vector<ClassReportExercise>& exercises,
                              double max_total, const std::vector<ClassReportStudent>& students) {
    std::string page = page_head(title) + scores_section(max_total, students);
    for (const auto& exercise : exercises) {
        page += exercise_section(exercise, tally_exercise(exercise, students));
    }
    return page + "</body></html>\n";
}

}  // namespace cugrade
