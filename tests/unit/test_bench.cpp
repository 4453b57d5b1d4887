// bench's table as it prints it while it measures, and its JSON, from figures made up here (the figures themselves
// need a GPU: test_cli.cpp).
#include <string>

#include "catch.hpp"
#include "grading/bench.hpp"

namespace {

using namespace cugrade;

BenchReport sample_bench() {
    BenchReport report;
    report.gpu = {true, "NVIDIA H100 80GB HBM3", 9, 0, ""};
    BenchRow reference;
    reference.exercise = "sum";
    reference.shape = {1048576};
    reference.what = "reference";
    reference.ms = 0.0069;
    reference.gb_per_s = 604.3;
    reference.copy_fraction = 0.199;
    reference.rse = 0.001;
    reference.samples = 200;
    BenchRow copy;
    copy.exercise = "sum";
    copy.shape = {1048576};
    copy.what = "copy";
    copy.gb_per_s = 3037.0;
    copy.copy_fraction = 1.0;
    BenchRow cub = reference;
    cub.what = "cub";
    cub.ms = 0.0081;
    cub.gb_per_s = 515.0;
    cub.copy_fraction = 0.17;
    cub.reference_over_this = 0.8519;
    BenchRow failed;
    failed.exercise = "dot";
    failed.shape = {1048576};
    failed.what = "cublas";
    failed.error = "'exercises/dot/baselines/cublas.cu' is missing";
    report.rows = {reference, copy, cub, failed};
    report.checkers = 11;
    report.build_jobs = 11;
    report.build_seconds = 52.14;
    report.speed_tests = 1;
    report.timing_seconds = 3.96;
    return report;
}

}  // namespace

TEST_CASE("bench prints the GPU, the builds' time, then the header and a row at a time, then the timing's time") {
    const BenchReport report = sample_bench();
    CHECK(bench_title(report.gpu) == "cugrade bench on NVIDIA H100 80GB HBM3 (sm_90)\n");
    CHECK(bench_header(report) ==
          "built 11 checkers in 52.1 s, 11 at a time\n"
          "\n"
          "exercise   size           what               ms      GB/s  of copy   spread  samples reference/this\n");
    CHECK(bench_row(report.rows[0]) ==
          "sum        n=1048576      reference      0.0069       604    19.9%    0.10%      200               \n");
    CHECK(bench_row(report.rows[1]) ==
          "sum        n=1048576      copy                       3037   100.0%                                 \n");
    CHECK(bench_row(report.rows[2]) ==
          "sum        n=1048576      cub            0.0081       515    17.0%    0.10%      200          0.852\n");
    CHECK(bench_row(report.rows[3]) ==
          "dot        n=1048576      cublas     failed: 'exercises/dot/baselines/cublas.cu' is missing\n");
    const std::string ending = bench_ending(report);
    CHECK(ending.starts_with("\ntimed 1 speed test in 4.0 s, one at a time\n\nGB/s counts the bytes"));
    CHECK(ending.ends_with("below 1, the reference is\nfaster.\n"));
}

TEST_CASE("bench without a cache says that it built nothing ahead") {
    BenchReport report = sample_bench();
    report.checkers = 0;
    CHECK(bench_header(report).starts_with("built no checkers ahead of the timing\n\n"));
}

TEST_CASE("bench's JSON holds the rows and nothing of the build or timing seconds") {
    const nlohmann::json json = bench_to_json(sample_bench());
    CHECK(json["schema"] == "cugrade-bench");
    CHECK(json["schema_version"] == 1);
    CHECK(json["gpu"] == nlohmann::json{{"name", "NVIDIA H100 80GB HBM3"}, {"compute_capability", "9.0"}});
    REQUIRE(json["rows"].size() == 4);
    CHECK(json["rows"][0] == nlohmann::json{{"exercise", "sum"},
                                            {"shape", {1048576}},
                                            {"what", "reference"},
                                            {"ms", 0.0069},
                                            {"gb_per_s", 604.3},
                                            {"copy_fraction", 0.199},
                                            {"median_rse", 0.001},
                                            {"samples", 200}});
    CHECK(json["rows"][2]["reference_over_this"] == 0.8519);
    CHECK(json["rows"][3] == nlohmann::json{{"exercise", "dot"},
                                            {"shape", {1048576}},
                                            {"what", "cublas"},
                                            {"error", "'exercises/dot/baselines/cublas.cu' is missing"}});
    CHECK(json.size() == 4);
}
