// The harness's result record (exercises/common/case_record.cpp): what a case reports, built from plain values in
// the exercise's CUDA file, reaches the grader as the JSON it reads, each measurement's kind kept.
#include <nlohmann/json.hpp>

#include "case_record.hpp"
#include "catch.hpp"

using cugrade::harness::CaseOutcome;
using cugrade::harness::Explanation;
using cugrade::harness::KernelProfile;
using cugrade::harness::Measurements;
using cugrade::harness::result_record;

TEST_CASE("a case's measurements keep their kinds: flag, integer, unsigned, float") {
    Measurements measurements = {{"exact", true}, {"k", 1025}, {"tolerance", 0.5f}};
    measurements.set("samples", std::size_t{10});
    measurements.set("k", -3);  // set again: replaced, not repeated
    const nlohmann::json record = result_record("edges/n=1/integers", CaseOutcome::passed(measurements));
    CHECK(record.at("event") == "result");
    CHECK(record.at("case") == "edges/n=1/integers");
    CHECK(record.at("status") == "passed");
    CHECK(record.at("detail") == "");
    const nlohmann::json& measured = record.at("measurements");
    CHECK(measured.size() == 4);
    CHECK(measured.at("exact").is_boolean());
    CHECK(measured.at("k").is_number_integer());
    CHECK_FALSE(measured.at("k").is_number_unsigned());
    CHECK(measured.at("k") == -3);
    CHECK(measured.at("samples").is_number_unsigned());
    CHECK(measured.at("tolerance").is_number_float());
    CHECK(measured.at("tolerance") == 0.5);
    CHECK_FALSE(record.contains("explanation"));
}

TEST_CASE("a wrong answer's explanation goes beside its detail") {
    Explanation explanation;
    explanation.summary = "the last element is left out";
    explanation.category = "left out at the end";
    explanation.topic = "bounds";
    explanation.evidence = {"n = 1025"};
    const nlohmann::json record =
        result_record("edges/n=1025/integers", CaseOutcome::wrong_answer("call 1 of 3: wrong", explanation));
    CHECK(record.at("status") == "wrong_answer");
    CHECK(record.at("measurements") == nlohmann::json::object());
    CHECK(record.at("explanation") == nlohmann::json{{"summary", "the last element is left out"},
                                                     {"category", "left out at the end"},
                                                     {"hint", ""},
                                                     {"topic", "bounds"},
                                                     {"evidence", {"n = 1025"}},
                                                     {"map", nlohmann::json::array()}});
}

TEST_CASE("a slow speed test's counters are a measurement: made, refused, failed or unwanted") {
    CaseOutcome outcome = CaseOutcome::passed({{"submission_ms", 1.5}});
    KernelProfile made;
    made.launches.push_back({"partial_sums", {{"dram__bytes_read.sum", 1.0e9}}});
    made.passes = 5;
    made.setup_seconds = 0.1;
    made.seconds = 0.4;
    made.steps = {{"passes", 0.1}};
    outcome.kernel_profile = made;
    nlohmann::json profile = result_record("speed", outcome).at("measurements").at("kernel_profile");
    const nlohmann::json launch = {{"name", "partial_sums"}, {"metrics", {{"dram__bytes_read.sum", 1.0e9}}}};
    CHECK(profile == nlohmann::json{{"launches", nlohmann::json::array({launch})},
                                    {"passes", 5},
                                    {"setup_seconds", 0.1},
                                    {"seconds", 0.4},
                                    {"steps", {{"passes", 0.1}}}});
    CHECK(result_record("speed", outcome).at("measurements").at("submission_ms") == 1.5);

    KernelProfile refused = KernelProfile::none("other profiles held the GPU's counters");
    refused.turn_refused = true;
    outcome.kernel_profile = refused;
    profile = result_record("speed", outcome).at("measurements").at("kernel_profile");
    CHECK(profile == nlohmann::json{{"problem", "other profiles held the GPU's counters"}, {"turn_refused", true}});

    KernelProfile failed = KernelProfile::none("cuptiRangeProfilerStart failed");
    failed.after_calls = true;
    outcome.kernel_profile = failed;
    profile = result_record("speed", outcome).at("measurements").at("kernel_profile");
    CHECK(profile == nlohmann::json{{"problem", "cuptiRangeProfilerStart failed"}, {"after_calls", true}});

    KernelProfile unwanted;
    unwanted.unwanted = true;
    outcome.kernel_profile = unwanted;
    CHECK(result_record("speed", outcome).at("measurements").at("kernel_profile") ==
          nlohmann::json{{"unwanted", true}});
}
