// What the failing cases share: each pattern on the verdicts the fixture corpus gives, no pattern where the verdicts
// show none or where only a hidden case would show it, and the class report's count of each.
#include <string>
#include <vector>

#include "catch.hpp"
#include "batch/class_report.hpp"
#include "score/failure_patterns.hpp"

namespace {

using namespace cugrade;

ScoredCase verdict(const std::string& group, std::vector<std::uint64_t> shape, const std::string& input, Status status,
                   const std::string& detail = "", Visibility visibility = Visibility::visible) {
    ScoredCase c;
    c.plan.shape = std::move(shape);
    c.plan.group = group;
    c.plan.id = group + "/" +
                (c.plan.shape.size() == 1 ? "n=" + std::to_string(c.plan.shape[0])
                                          : std::to_string(c.plan.shape[0]) + "x" + std::to_string(c.plan.shape[1])) +
                "/" + input;
    c.plan.inputs = {{{input}, 0}};
    c.plan.visibility = visibility;
    c.status = status;
    c.detail = detail.empty() && status != Status::passed ? "call 1 of 3: wrong" : detail;
    return c;
}

std::vector<std::string> summaries(const std::vector<ScoredCase>& cases) {
    std::vector<std::string> found;
    for (const auto& d : failure_patterns(cases)) {
        found.push_back(d.summary);
    }
    return found;
}

}  // namespace

TEST_CASE("sizes that are not a multiple of the block fail: the largest such block is named") {
    std::vector<ScoredCase> cases;
    for (const std::uint64_t n : {0, 1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025}) {
        cases.push_back(verdict("edges", {n}, "integers", n % 256 == 0 ? Status::passed : Status::wrong_answer));
    }
    cases.push_back(verdict("large", {4194301}, "integers", Status::wrong_answer, "", Visibility::hidden));
    const auto found = failure_patterns(cases);
    REQUIRE(found.size() == 1);
    CHECK(found[0].summary == "fails every n that is not a multiple of 256");
    CHECK(found[0].scope == "9 of 12 visible cases fail");
    CHECK(found[0].evidence.size() == 9);
    CHECK(std::find(found[0].evidence.begin(), found[0].evidence.end(), "large/n=4194301/integers") ==
          found[0].evidence.end());

    // One dropped value among 65537 real values lies within the sum's tolerance: that case passes, and the pattern
    // stands.
    cases.push_back(verdict("medium", {65536}, "positive", Status::passed));
    cases.push_back(verdict("medium", {65537}, "positive", Status::passed));
    cases.push_back(verdict("medium", {65537}, "integers", Status::wrong_answer));
    REQUIRE(failure_patterns(cases).size() == 1);
    CHECK(failure_patterns(cases)[0].summary == "fails every n that is not a multiple of 256");
}

TEST_CASE("right on the first call, wrong on a later one: state outlived the call") {
    // A counter never reset: the first case is right on call 1 only; every later case is wrong from its first call.
    std::vector<ScoredCase> cases = {
        verdict("edges", {1}, "integers", Status::wrong_answer, "call 2 of 3: n=1: expected 2, got nan"),
        verdict("edges", {32}, "integers", Status::wrong_answer, "call 1 of 3: n=32: expected 64, got nan"),
        verdict("edges", {33}, "integers", Status::wrong_answer, "call 1 of 3: n=33: expected 66, got nan"),
    };
    const auto found = failure_patterns(cases);
    REQUIRE(found.size() == 1);
    CHECK(found[0].summary == "right on the first call, wrong on a later call of the same input");
    CHECK(found[0].scope == "1 of 3 visible cases");
    CHECK(found[0].evidence == std::vector<std::string>{"edges/n=1/integers"});

    // The same sizes wrong from the first call, only the empty input passing: nothing is computed at all.
    cases[0].detail = "call 1 of 3: n=1: expected 2, got nan";
    cases.push_back(verdict("edges", {0}, "integers", Status::passed));
    CHECK(summaries(cases) == std::vector<std::string>{"right only where there is nothing to compute, n = 0"});
}

TEST_CASE("matrices: non-square shapes, and sides that are not a multiple of the tile") {
    std::vector<ScoredCase> square = {
        verdict("shapes", {1, 4097}, "uniform", Status::wrong_answer),
        verdict("shapes", {31, 33}, "uniform", Status::wrong_answer),
        verdict("shapes", {32, 32}, "uniform", Status::passed),
        verdict("shapes", {33, 33}, "uniform", Status::passed),
        verdict("shapes", {8191, 8193}, "uniform", Status::cuda_error),
    };
    CHECK(summaries(square) == std::vector<std::string>{"fails only non-square shapes"});
    // One column: a swapped index still visits each element once. The failures are still all non-square.
    square.push_back(verdict("shapes", {33, 31}, "uniform", Status::wrong_answer));
    square.push_back(verdict("shapes", {4097, 1}, "uniform", Status::passed));
    CHECK(summaries(square) == std::vector<std::string>{"fails only non-square shapes"});

    std::vector<ScoredCase> tiles = {
        verdict("shapes", {32, 32}, "uniform", Status::passed),
        verdict("shapes", {64, 96}, "uniform", Status::passed),
        verdict("shapes", {33, 31}, "uniform", Status::wrong_answer),
        verdict("shapes", {32, 33}, "uniform", Status::wrong_answer),
    };
    CHECK(summaries(tiles) ==
          std::vector<std::string>{"fails every shape whose rows or columns are not a multiple of 32"});
}

TEST_CASE("one size fails and every other passes: the edge is named, and a hang gets its own hint") {
    std::vector<ScoredCase> cases;
    for (const std::uint64_t n : {0, 1, 2, 31, 1025}) {
        for (const char* input : {"integers", "signed"}) {
            cases.push_back(verdict("edges", {n}, input, n == 1 ? Status::timed_out : Status::passed));
        }
    }
    const auto found = failure_patterns(cases);
    REQUIRE(found.size() == 1);
    CHECK(found[0].summary == "fails only when n = 1; every other size passes");
    CHECK(found[0].hint.find("never ends") != std::string::npos);
    // The largest size alone is "fails only above".
    for (auto& c : cases) {
        c.status = c.plan.shape[0] == 1025 ? Status::wrong_answer : Status::passed;
    }
    CHECK(summaries(cases) ==
          std::vector<std::string>{"fails only above 31 elements: right up to 31, wrong from 1025 on"});
}

TEST_CASE("with a race among the cases, a later call's failure is not taken for state left behind") {
    ScoredCase race = verdict("races", {1025}, "i", Status::race);
    race.plan.race_check = true;
    std::vector<ScoredCase> cases = {
        race,
        verdict("edges", {33}, "integers", Status::wrong_answer, "call 2 of 3: n=33: expected 66, got 65"),
        verdict("edges", {32}, "integers", Status::passed),
    };
    CHECK(summaries(cases).empty());
}

TEST_CASE("one kind of input fails, the others pass") {
    std::vector<ScoredCase> cases = {
        verdict("edges", {31}, "positive", Status::wrong_answer),
        verdict("edges", {32}, "positive", Status::wrong_answer),
        verdict("edges", {31}, "signed", Status::passed),
        verdict("edges", {32}, "signed", Status::passed),
    };
    CHECK(summaries(cases) == std::vector<std::string>{"fails only with the 'positive' inputs"});
}

TEST_CASE("one setting of an exercise parameter fails; an empty case shows nothing") {
    std::vector<ScoredCase> cases;
    for (const std::uint64_t n : {0, 1, 33, 257}) {
        for (const double exclusive : {0.0, 1.0}) {
            ScoredCase c = verdict(exclusive != 0 ? "exclusive" : "inclusive", {n}, "integers",
                                   exclusive != 0 && n > 0 ? Status::wrong_answer : Status::passed);
            c.plan.parameters = {{"exclusive", exclusive}};
            cases.push_back(c);
        }
    }
    CHECK(summaries(cases) == std::vector<std::string>{"fails only when exclusive is 1"});
}

TEST_CASE("no pattern from one failure, from failures everywhere, or from what only hidden cases show") {
    CHECK(
        failure_patterns({verdict("edges", {1}, "i", Status::wrong_answer), verdict("edges", {2}, "i", Status::passed)})
            .empty());
    CHECK(failure_patterns(
              {verdict("edges", {1}, "i", Status::wrong_answer), verdict("edges", {2}, "i", Status::wrong_answer)})
              .empty());
    CHECK(failure_patterns({verdict("edges", {1}, "i", Status::passed),
                            verdict("large", {3}, "i", Status::wrong_answer, "", Visibility::hidden),
                            verdict("large", {5}, "i", Status::wrong_answer, "", Visibility::hidden)})
              .empty());
    // A race and a slow speed test are explained elsewhere; neither counts.
    ScoredCase race = verdict("races", {1025}, "i", Status::race);
    race.plan.race_check = true;
    CHECK(failure_patterns({race, verdict("edges", {1}, "i", Status::passed)}).empty());
}

TEST_CASE("the class report counts the students each pattern fits, the commonest first") {
    const auto results = [](std::vector<std::string> summaries) {
        nlohmann::json patterns = nlohmann::json::array();
        for (const auto& summary : summaries) {
            patterns.push_back({{"kind", "pattern"}, {"summary", summary}});
        }
        return nlohmann::json{{"exercises", {{{"exercise", "sum"}, {"outcome", "failed"}, {"patterns", patterns}}}}};
    };
    std::vector<ClassReportStudent> students = {
        {"ana", "graded", 50, results({"fails every n that is not a multiple of 256"}), {}},
        {"ben",
         "graded",
         40,
         results({"right on the first call, wrong on a later call of the same input",
                  "fails every n that is not a multiple of 256"}),
         {}},
        {"cy", "graded", 100, results({}), {}},
    };
    const std::string page = class_report_html("class", {{"sum", 100, "ratio", {1.15}}}, 100, students);
    const auto multiple = page.find("<tr><td>fails every n that is not a multiple of 256</td><td>2</td></tr>");
    const auto later = page.find("<tr><td>right on the first call, wrong on a later call of the same input</td>"
                                 "<td>1</td></tr>");
    CHECK(multiple != std::string::npos);
    CHECK(later != std::string::npos);
    CHECK(multiple < later);
}
