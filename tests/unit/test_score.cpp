#include "catch.hpp"
#include "score/score.hpp"

using namespace cugrade;

namespace {

Rubric rubric_with_tiers(SpeedMetric metric = SpeedMetric::ratio, SpeedScale scale = SpeedScale::stepped) {
    Rubric rubric;
    SpeedTest speed;
    speed.metric = metric;
    speed.scale = scale;
    speed.tiers = metric == SpeedMetric::ratio ? std::vector<SpeedTier>{{1.5, 30.0}, {3.0, 20.0}, {10.0, 10.0}}
                                               : std::vector<SpeedTier>{{0.8, 30.0}, {0.5, 10.0}};
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

// 4 GB moved; the copy runs at 4000 GB/s, so 1 ms is the whole copy bandwidth.
CaseResult timed(double submission_ms, double reference_ms) {
    return {Status::passed,
            "",
            {{"submission_ms", submission_ms},
             {"reference_ms", reference_ms},
             {"submission_rse", 0.002},
             {"samples", 25},
             {"bytes", 4e9},
             {"copy_gbps", 4000.0}}};
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
    CHECK(fast.detail == "1.20x the reference's time: 1.200 ms vs 1.000 ms (+-0.2%); 3333 GB/s, 83% of the copy "
                         "bandwidth; median of 25");

    const ScoredCase middle = score_case(speed_plan(), timed(2.0, 1.0), rubric);
    CHECK(middle.status == Status::slow);
    CHECK(middle.points == 20.0);
    CHECK(middle.detail == "2.00x the reference's time: 2.000 ms vs 1.000 ms (+-0.2%); 2000 GB/s, 50% of the copy "
                           "bandwidth; median of 25; 1.50x the reference's time or faster earns 30");

    const ScoredCase slowest = score_case(speed_plan(), timed(40.0, 1.0), rubric);
    CHECK(slowest.status == Status::slow);
    CHECK(slowest.points == 0.0);
}

TEST_CASE("a linear scale interpolates between tiers") {
    const Rubric rubric = rubric_with_tiers(SpeedMetric::ratio, SpeedScale::linear);
    CHECK(score_case(speed_plan(), timed(1.0, 1.0), rubric).points == 30.0);
    CHECK(score_case(speed_plan(), timed(2.25, 1.0), rubric).points == Approx(25.0));
    CHECK(score_case(speed_plan(), timed(6.5, 1.0), rubric).points == Approx(15.0));
    CHECK(score_case(speed_plan(), timed(11.0, 1.0), rubric).points == 0.0);
}

TEST_CASE("the bandwidth metric scores the fraction of the copy bandwidth") {
    const Rubric rubric = rubric_with_tiers(SpeedMetric::bandwidth);
    CHECK(score_case(speed_plan(), timed(1.1, 5.0), rubric).points == 30.0);    // 91% of the copy
    const ScoredCase half = score_case(speed_plan(), timed(1.6, 1.0), rubric);  // 62%
    CHECK(half.points == 10.0);
    CHECK_THAT(half.detail, contains_text("; 80% of the copy bandwidth or more earns 30"));
    CHECK(score_case(speed_plan(), timed(2.5, 1.0), rubric).points == 0.0);  // 40%
}

TEST_CASE("a time faster than the copy bandwidth allows is an invalid measurement, never rewarded") {
    const ScoredCase impossible = score_case(speed_plan(), timed(0.5, 1.0), rubric_with_tiers());
    CHECK(impossible.status == Status::invalid_measurement);
    CHECK(impossible.points == 0.0);
    CHECK(impossible.detail == "0.500 ms is faster than moving 4000 MB at the measured copy bandwidth (4000 GB/s) "
                               "allows: the measurement cannot be trusted and earns nothing");
    // Within the margin (the copy counts reads and writes; a pure read may run a little faster) it is believed.
    CHECK(score_case(speed_plan(), timed(0.95, 1.0), rubric_with_tiers()).status == Status::passed);
}

TEST_CASE("a speed test that was wrong earns no speed points") {
    const ScoredCase wrong =
        score_case(speed_plan(), {Status::wrong_answer, "call 1 of 3: ...", {}}, rubric_with_tiers());
    CHECK(wrong.status == Status::wrong_answer);
    CHECK(wrong.points == 0.0);
}

TEST_CASE("points are shown with at most two decimals") {
    CHECK(format_points(30.0) == "30");
    CHECK(format_points(1.25) == "1.25");
    CHECK(format_points(10.0 / 3.0) == "3.33");
    CHECK(format_points(0.0) == "0");
}

namespace {

ScoredCase scored(const std::string& id, Visibility visibility, Status status, const std::string& detail,
                  double points) {
    ScoredCase c;
    c.plan.id = id;
    c.plan.visibility = visibility;
    c.plan.max_points = 1.0;
    c.status = status;
    c.detail = detail;
    c.points = points;
    return c;
}

const std::string host_read =
    "cudaMemcpy: reads device memory from the host; compute on the GPU and leave the results in the buffers you are "
    "given";

}  // namespace

TEST_CASE("a submission rejected in one case keeps nothing: every case is rejected with that reason") {
    std::vector<ScoredCase> cases = {
        scored("all/n=0/inside", Visibility::visible, Status::passed, "", 1.0),
        scored("all/n=1/inside", Visibility::visible, Status::rejected, host_read, 0.0),
        scored("all/n=2/inside", Visibility::visible, Status::wrong_answer, "counts[3]: expected 1, got 0", 0.0),
        scored("big/n=4194301/inside", Visibility::hidden, Status::passed, "", 1.0),
    };
    cases[0].measurements = {{"seconds", 0.5}};
    cases[0].diagnosis = Diagnosis{};
    keep_nothing_after_rejection(cases);
    for (const auto& c : cases) {
        INFO(c.plan.id);
        CHECK(c.status == Status::rejected);
        CHECK(c.detail == host_read);
        CHECK(c.points == 0.0);
    }
    CHECK(cases[0].measurements.empty());
    CHECK_FALSE(cases[0].diagnosis.has_value());
}

TEST_CASE("wrong answers alone keep what they earned: only a rejection takes everything") {
    std::vector<ScoredCase> cases = {
        scored("all/n=0/inside", Visibility::visible, Status::passed, "", 1.0),
        scored("all/n=1/inside", Visibility::visible, Status::wrong_answer, "counts[0]: expected 1, got 0", 0.0),
        scored("races/n=1025/edges", Visibility::visible, Status::race, "a race on shared memory", 0.0),
    };
    keep_nothing_after_rejection(cases);
    CHECK(cases[0].status == Status::passed);
    CHECK(cases[0].points == 1.0);
    CHECK(cases[1].status == Status::wrong_answer);
    CHECK(cases[2].status == Status::race);
}

// The text of a hidden case's refusal may come from the submission's own process: any of it could spell out the case.
TEST_CASE("a rejection found only in a hidden case reaches the others without its detail") {
    std::vector<ScoredCase> cases = {
        scored("all/n=0/inside", Visibility::visible, Status::passed, "", 1.0),
        scored("big/n=4194301/inside", Visibility::hidden, Status::rejected,
               "asks for work the grader does not know (four million one hundred ninety-four thousand)", 0.0),
        scored("big/n=268435456/inside", Visibility::hidden, Status::passed, "", 1.0),
    };
    keep_nothing_after_rejection(cases);
    CHECK(cases[0].status == Status::rejected);
    CHECK(cases[0].detail == "a hidden case broke a rule of the exercise (details of hidden cases are not shown): a "
                             "submission that breaks a rule earns nothing");
    CHECK(cases[1].detail == "asks for work the grader does not know (four million one hundred ninety-four thousand)");
    CHECK(cases[2].status == Status::rejected);
    CHECK(cases[2].detail == cases[0].detail);
    CHECK(cases[2].points == 0.0);
}

TEST_CASE("a visible case's reason is the one every case takes, before a hidden case's") {
    std::vector<ScoredCase> cases = {
        scored("big/n=4194301/inside", Visibility::hidden, Status::rejected, "uploads 16777204 bytes", 0.0),
        scored("all/n=0/inside", Visibility::visible, Status::passed, "", 1.0),
        scored("all/n=33/inside", Visibility::visible, Status::rejected, host_read, 0.0),
    };
    keep_nothing_after_rejection(cases);
    CHECK(cases[1].status == Status::rejected);
    CHECK(cases[1].detail == host_read);
    CHECK(cases[0].detail == "uploads 16777204 bytes");
}
