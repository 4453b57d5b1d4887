#include "catch.hpp"
#include "cugrade/score.hpp"

using namespace cugrade;

namespace {

Rubric rubric_with_tiers() {
    Rubric rubric;
    SpeedTest speed;
    speed.tiers = {{1.5, 30.0}, {3.0, 20.0}, {10.0, 10.0}};
    rubric.speed = speed;
    return rubric;
}

CasePlan speed_plan() {
    CasePlan plan;
    plan.id = "speed/n=1000/positive";
    plan.timed = true;
    plan.max_points = 30.0;
    return plan;
}

CaseResult timed(double submission_ms, double reference_ms) {
    return {Status::passed, "", {{"submission_ms", submission_ms}, {"reference_ms", reference_ms}, {"samples", 25},
                                 {"bytes", 4e9}}};
}

}  // namespace

TEST_CASE("a correct case earns its share; any other verdict earns nothing") {
    CasePlan plan;
    plan.max_points = 1.25;
    CHECK(score_case(plan, {Status::passed, "", {}}, Rubric{}).points == 1.25);
    CHECK(score_case(plan, {Status::wrong_answer, "x", {}}, Rubric{}).points == 0.0);
    CHECK(score_case(plan, {Status::timed_out, "x", {}}, Rubric{}).points == 0.0);
}

TEST_CASE("the speed test earns the tier its time reaches") {
    const Rubric rubric = rubric_with_tiers();
    const ScoredCase fast = score_case(speed_plan(), timed(1.2, 1.0), rubric);
    CHECK(fast.status == Status::passed);
    CHECK(fast.points == 30.0);
    CHECK(fast.detail == "1.20x the reference's time: 1.200 ms vs 1.000 ms (3333 GB/s, median of 25)");

    const ScoredCase middle = score_case(speed_plan(), timed(2.0, 1.0), rubric);
    CHECK(middle.status == Status::slow);
    CHECK(middle.points == 20.0);
    CHECK(middle.detail ==
          "2.00x the reference's time: 2.000 ms vs 1.000 ms (2000 GB/s, median of 25); 1.50x or faster earns 30");

    const ScoredCase slowest = score_case(speed_plan(), timed(40.0, 1.0), rubric);
    CHECK(slowest.status == Status::slow);
    CHECK(slowest.points == 0.0);
}

TEST_CASE("a speed test that was wrong earns no speed points") {
    const ScoredCase wrong = score_case(speed_plan(), {Status::wrong_answer, "call 1 of 3: ...", {}}, rubric_with_tiers());
    CHECK(wrong.status == Status::wrong_answer);
    CHECK(wrong.points == 0.0);
}

TEST_CASE("points are shown with at most two decimals") {
    CHECK(format_points(30.0) == "30");
    CHECK(format_points(1.25) == "1.25");
    CHECK(format_points(10.0 / 3.0) == "3.33");
    CHECK(format_points(0.0) == "0");
}
