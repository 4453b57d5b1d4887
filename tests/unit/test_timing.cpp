// The host-side parts of the speed test's timing: the order of its timed pairs (sample_order.hpp), NVML's clock event
// reasons in words and the GPU's state in the detail (gpu_conditions.hpp), and that detail in a scored speed test.
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "score/score.hpp"
#include "gpu_conditions.hpp"
#include "sample_order.hpp"

using namespace cugrade;
namespace conditions = cugrade::gpu_conditions;

namespace {

std::vector<harness::TimedPair> first_pairs(std::uint64_t seed, int sets, std::size_t count) {
    harness::SampleOrder order(seed, sets);
    std::vector<harness::TimedPair> pairs;
    for (std::size_t i = 0; i < count; ++i) {
        pairs.push_back(order.at(i));
    }
    return pairs;
}

std::vector<std::pair<int, bool>> as_values(const std::vector<harness::TimedPair>& pairs) {
    std::vector<std::pair<int, bool>> values;
    for (const auto& pair : pairs) {
        values.emplace_back(pair.set, pair.submission_first);
    }
    return values;
}

}  // namespace

TEST_CASE("each round of timed pairs has every input set with each side first once") {
    for (const int sets : {1, 2, 3, 5}) {
        harness::SampleOrder order(42, sets);
        REQUIRE(order.round_size() == static_cast<std::size_t>(2 * sets));
        for (std::size_t round = 0; round < 20; ++round) {
            std::set<std::pair<int, bool>> seen;
            for (std::size_t i = 0; i < order.round_size(); ++i) {
                const harness::TimedPair pair = order.at(round * order.round_size() + i);
                CHECK(pair.set >= 0);
                CHECK(pair.set < sets);
                seen.emplace(pair.set, pair.submission_first);
            }
            CHECK(seen.size() == order.round_size());
        }
    }
}

TEST_CASE("wherever sampling stops, each side has gone first as often as the other to within a round") {
    harness::SampleOrder order(7, 3);
    int submission_first = 0;
    std::map<int, int> per_set;
    for (std::size_t i = 0; i < 1000; ++i) {
        const harness::TimedPair pair = order.at(i);
        submission_first += pair.submission_first ? 1 : 0;
        ++per_set[pair.set];
        const int reference_first = static_cast<int>(i + 1) - submission_first;
        CHECK(std::abs(submission_first - reference_first) <= 3);
    }
    CHECK(per_set.size() == 3);
    for (const auto& [set, count] : per_set) {
        CHECK(std::abs(count - 1000 / 3) <= 2);
    }
}

TEST_CASE("the order of timed pairs is the same for a case on every run, and differs between seeds") {
    CHECK(as_values(first_pairs(4, 3, 60)) == as_values(first_pairs(4, 3, 60)));
    CHECK(as_values(first_pairs(4, 3, 60)) != as_values(first_pairs(5, 3, 60)));
    // Asking out of order gives the same pairs as asking in turn.
    harness::SampleOrder order(4, 3);
    const harness::TimedPair late = order.at(59);
    CHECK(std::make_pair(late.set, late.submission_first) == as_values(first_pairs(4, 3, 60)).back());
}

TEST_CASE("the order of timed pairs is shuffled, not a fixed alternation") {
    // Over 100 rounds of 6, a fixed pattern would repeat every round; a shuffle rarely repeats its previous round.
    const auto values = as_values(first_pairs(4, 3, 600));
    int repeated_rounds = 0;
    for (std::size_t round = 1; round < 100; ++round) {
        repeated_rounds +=
            std::equal(values.begin() + round * 6, values.begin() + round * 6 + 6, values.begin() + (round - 1) * 6)
                ? 1
                : 0;
    }
    CHECK(repeated_rounds < 10);
    std::set<std::vector<std::pair<int, bool>>> distinct_rounds;
    for (std::size_t round = 0; round < 100; ++round) {
        distinct_rounds.emplace(values.begin() + round * 6, values.begin() + round * 6 + 6);
    }
    CHECK(distinct_rounds.size() > 50);
}

TEST_CASE("clock event reasons that slow the GPU are named in words; the others are not throttling") {
    CHECK(conditions::throttle_words(conditions::reason_thermal) == "thermal");
    CHECK(conditions::throttle_words(conditions::reason_power_cap | conditions::reason_thermal) ==
          "thermal, power cap");
    CHECK(conditions::throttle_words(conditions::reason_hardware_slowdown | conditions::reason_hardware_thermal |
                                     conditions::reason_power_brake) ==
          "hardware thermal, power brake, hardware slowdown");
    CHECK(conditions::throttle_words(0) == "");

    const std::uint64_t how_it_runs = conditions::reason_gpu_idle | conditions::reason_applications_clocks |
                                      conditions::reason_sync_boost | conditions::reason_display_clocks;
    CHECK_FALSE(conditions::throttled(how_it_runs));
    CHECK(conditions::throttle_words(how_it_runs) == "");
    CHECK(conditions::throttled(how_it_runs | conditions::reason_power_cap));
    CHECK(conditions::throttle_words(how_it_runs | conditions::reason_power_cap) == "power cap");
    // Bits NVML may add later are not taken for throttling.
    CHECK_FALSE(conditions::throttled(0x8000000000ULL));
}

TEST_CASE("the GPU's state over the timed calls: the lowest clock, the highest temperature, every reason") {
    conditions::Conditions c;
    CHECK_FALSE(c.known);
    CHECK(conditions::detail(c) == "");
    c.add(1980, 45, conditions::reason_gpu_idle);
    c.add(1755, 51, 0);
    c.add(1980, 48, conditions::reason_power_cap);
    CHECK(c.known);
    CHECK(c.sm_clock_mhz == 1755);
    CHECK(c.temperature_c == 51);
    CHECK(c.reasons == (conditions::reason_gpu_idle | conditions::reason_power_cap));
}

TEST_CASE("the speed test's detail names the GPU's clock and temperature, and any throttling") {
    conditions::Conditions cool;
    cool.add(1980, 45, conditions::reason_gpu_idle);
    CHECK(conditions::detail(cool) == "the GPU at 1980 MHz, 45 C");

    conditions::Conditions again = cool;
    again.remeasured = true;
    CHECK(conditions::detail(again) == "the GPU at 1980 MHz, 45 C (measured again: the first measurement throttled)");

    conditions::Conditions hot;
    hot.add(1410, 83, conditions::reason_thermal | conditions::reason_gpu_idle);
    hot.remeasured = true;
    CHECK(conditions::detail(hot) == "measured while the GPU throttled (thermal): 1410 MHz, 83 C");
}

namespace {

Rubric rubric_with_one_tier() {
    Rubric rubric;
    SpeedTest speed;
    speed.tiers = {{1.5, 30.0}};
    rubric.speed = speed;
    return rubric;
}

CasePlan timed_plan() {
    CasePlan plan;
    plan.id = "speed/n=1000/positive";
    plan.timed = true;
    plan.max_points = 30.0;
    return plan;
}

CaseResult timed_on_gpu(nlohmann::json gpu) {
    nlohmann::json m = {{"submission_ms", 1.2}, {"reference_ms", 1.0}, {"submission_rse", 0.002},
                        {"samples", 25},        {"bytes", 4e9},        {"copy_gbps", 4000.0}};
    m.update(gpu);
    return {Status::passed, "", m};
}

}  // namespace

TEST_CASE("a scored speed test says what NVML read of the GPU, and nothing where it read nothing") {
    const std::string measured = "1.20x the reference's time: 1.200 ms vs 1.000 ms (+-0.2%); 3333 GB/s, 83% of the "
                                 "copy bandwidth; median of 25";
    CHECK(score_case(timed_plan(), timed_on_gpu(nlohmann::json::object()), rubric_with_one_tier()).detail == measured);
    CHECK(score_case(timed_plan(), timed_on_gpu({{"throttled_remeasured", false}}), rubric_with_one_tier()).detail ==
          measured);

    const ScoredCase cool = score_case(
        timed_plan(),
        timed_on_gpu({{"gpu_sm_clock_mhz", 1980u}, {"gpu_temperature_c", 45u}, {"gpu_clock_event_reasons", 1u}}),
        rubric_with_one_tier());
    CHECK(cool.detail == measured + "; the GPU at 1980 MHz, 45 C");
    CHECK(cool.points == 30.0);

    // Still throttled when measured again: said, and scored as measured.
    const ScoredCase hot = score_case(timed_plan(),
                                      timed_on_gpu({{"gpu_sm_clock_mhz", 1410u},
                                                    {"gpu_temperature_c", 83u},
                                                    {"gpu_clock_event_reasons", conditions::reason_thermal},
                                                    {"gpu_throttled", true},
                                                    {"throttled_remeasured", true}}),
                                      rubric_with_one_tier());
    CHECK(hot.detail == measured + "; measured while the GPU throttled (thermal): 1410 MHz, 83 C");
    CHECK(hot.points == 30.0);
}
