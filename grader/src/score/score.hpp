// Points: a case's share of its group when it passes; for the speed test, the tier its time reaches.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "course/rubric.hpp"
#include "base/results.hpp"
#include "base/status.hpp"

namespace cugrade {

struct ScoredCase {
    CasePlan plan;
    Status status = Status::skipped;
    std::string detail;
    nlohmann::json measurements = nlohmann::json::object();
    double points = 0.0;
    std::optional<Diagnosis> diagnosis = std::nullopt;  // the cause a compute-sanitizer rerun found
};

ScoredCase score_case(const CasePlan& plan, const CaseResult& result, const Rubric& rubric);

// A submission that broke the contract keeps nothing: once one case is rejected (a rule broken, at build or run time,
// not a wrong answer), every other case is rejected too and earns nothing, so that code that breaks a rule only where
// it runs (a copy to the host skipped when n is 0) earns no case where it does not. The others take the first rejected
// visible case's reason; where only hidden cases were rejected, rejected_in_a_hidden_case, since a hidden case's
// detail is never shown.
inline constexpr const char* rejected_in_a_hidden_case =
    "a hidden case broke a rule of the exercise (details of hidden cases are not shown): a submission that breaks a "
    "rule earns nothing";
void keep_nothing_after_rejection(std::vector<ScoredCase>& cases);

// A total of points: shares such as 10/3 do not add up exactly in binary, so totals are rounded to a millionth of a
// point (10 points over 3 cases total 10, not 10.000000000000002).
double round_points(double points);

// A number of points as a report shows it: at most two decimals, no trailing zeros ("1.25", "30").
std::string format_points(double points);

}  // namespace cugrade
