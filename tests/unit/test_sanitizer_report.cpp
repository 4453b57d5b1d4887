// compute-sanitizer's reports, as version 2025.3 printed them on an H100 for small programs with each bug (and, for
// racecheck, for tests/fixtures/sum/missing_syncthreads).
#include <string>

#include "catch.hpp"
#include "diagnose/sanitizer_report.hpp"

using namespace cugrade;

namespace {

const std::string write_past_the_end =
    "========= COMPUTE-SANITIZER\n"
    "========= Invalid __global__ write of size 4 bytes\n"
    "=========     at oob_write(float *, int)+0xc0 in /tmp/build/sum.cu:8\n"
    "=========     by thread (232,0,0) in block (3,0,0)\n"
    "=========     Access to 0x7f9668800fa0 is out of bounds\n"
    "=========     and is 1 bytes after the nearest allocation at 0x7f9668800000 of size 4,000 bytes\n"
    "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
    "=========         Host Frame: main [0x9268] in samples\n"
    "========= \n"
    "========= Program hit cudaErrorLaunchFailure (error 719) due to \"unspecified launch failure\" on CUDA API call "
    "to cudaDeviceSynchronize.\n"
    "=========     Saved host backtrace up to driver entry point at error\n"
    "=========         Host Frame: main [0x8e29] in samples\n"
    "========= \n"
    "oob_write: unspecified launch failure\n"
    "========= Target application returned an error\n"
    "========= ERROR SUMMARY: 2 errors\n";

}  // namespace

TEST_CASE("the first racecheck hazard becomes one line") {
    // As compute-sanitizer 2025.3 printed it for tests/fixtures/sum/missing_syncthreads on an H100.
    const std::string output =
        "========= COMPUTE-SANITIZER\n"
        "========= Error: Potential RAW hazard detected at __shared__ 0x580 in block (2,0,0) :\n"
        "=========     Write Thread (96,0,0) at partial_sums(const float *, unsigned long, float *)+0x2f0 in sum.cu:16\n"
        "=========     Read Thread (32,0,0) at partial_sums(const float *, unsigned long, float *)+0x2d0 in sum.cu:16\n"
        "=========     Current Value : 0\n"
        "=========     Saved host backtrace up to driver entry point at kernel launch time\n";
    CHECK(first_race_report(output) ==
          "Potential RAW hazard detected at __shared__ 0x580 in block (2,0,0): "
          "Write Thread (96,0,0) at partial_sums(const float *, unsigned long, float *) in sum.cu:16; "
          "Read Thread (32,0,0) at partial_sums(const float *, unsigned long, float *) in sum.cu:16");
    CHECK(first_race_report("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n").empty());
}

TEST_CASE("racecheck's first hazard becomes a diagnosis with both lines and the threads") {
    const std::string output =
        "========= COMPUTE-SANITIZER\n"
        "========= Error: Potential RAW hazard detected at __shared__ 0x580 in block (2,0,0) :\n"
        "=========     Write Thread (96,0,0) at partial_sums(const float *, unsigned long, float *)+0x2f0 in /tmp/x/sum.cu:16\n"
        "=========     Read Thread (32,0,0) at partial_sums(const float *, unsigned long, float *)+0x2d0 in /tmp/x/sum.cu:17\n"
        "=========     Current Value : 0\n";
    const auto found = race_diagnosis(output);
    REQUIRE(found);
    CHECK(found->kind == "race");
    CHECK(found->summary == "compute-sanitizer racecheck: a read after a write on shared memory with no barrier "
                            "between in partial_sums: a write at sum.cu:16 and a read at sum.cu:17");
    CHECK(found->evidence == std::vector<std::string>{"block (2,0,0): thread (96,0,0) writes, thread (32,0,0) reads"});
    CHECK(found->category == "a race on shared memory (racecheck)");
    CHECK(found->topic == "barrier");
    CHECK_FALSE(race_diagnosis("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"));

    // Between lanes of one warp racecheck warns, as it did for tests/fixtures/scan/missing_syncthreads.
    const std::string in_one_warp =
        "========= Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ 0x414 in block (1,0,0) :\n"
        "=========     Write Thread (2,0,0) at blelloch_blocks(const float *, unsigned long, float *, int, float *)+0x5a0 in scan.cu:26\n"
        "=========     Read Thread (1,0,0) at blelloch_blocks(const float *, unsigned long, float *, int, float *)+0x590 in scan.cu:26\n";
    const auto warp = race_diagnosis(in_one_warp);
    REQUIRE(warp);
    CHECK(warp->summary == "compute-sanitizer racecheck: a read after a write on shared memory between threads of one "
                           "warp, with no __syncwarp() between in blelloch_blocks: a write at scan.cu:26 and a read at "
                           "scan.cu:26");
    CHECK(warp->hint.find("__syncwarp()") != std::string::npos);
}

TEST_CASE("racecheck's analysis becomes a diagnosis with both lines and the number of hazards") {
    const std::string output =
        "========= COMPUTE-SANITIZER\n"
        "========= Error: Race reported between Write access at partial_sums(const float *, unsigned long, float *)+0x2f0 in /tmp/x/sum.cu:16\n"
        "=========     and Read access at partial_sums(const float *, unsigned long, float *)+0x2d0 in /tmp/x/sum.cu:17 [32 hazards]\n"
        "=========     and Write access at partial_sums(const float *, unsigned long, float *)+0x2f0 in /tmp/x/sum.cu:16 [4 hazards]\n"
        "========= \n"
        "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n";
    CHECK(
        first_race_report(output) ==
        "Race reported between Write access at partial_sums(const float *, unsigned long, float *) in /tmp/x/sum.cu:16; "
        "and Read access at partial_sums(const float *, unsigned long, float *) in /tmp/x/sum.cu:17 [32 hazards]; "
        "and Write access at partial_sums(const float *, unsigned long, float *) in /tmp/x/sum.cu:16 [4 hazards]");
    const auto found = race_diagnosis(output);
    REQUIRE(found);
    CHECK(found->summary == "compute-sanitizer racecheck: a write and a read on shared memory with no barrier between "
                            "in partial_sums: a write at sum.cu:16 and a read at sum.cu:17");
    CHECK(found->evidence == std::vector<std::string>{"32 hazards between these two lines in one launch"});
    CHECK(found->category == "a race on shared memory (racecheck)");
    CHECK(found->topic == "barrier");

    // A long kernel name goes on a line of its own, as racecheck printed it for
    // tests/fixtures/minmax/missing_syncthreads.
    const std::string wrapped =
        "========= Error: Race reported between Read access at\n"
        "=========     tree(const float *, unsigned long, float *, float *)+0x150 in /tmp/x/minmax.cu:9\n"
        "=========     and Write access at\n"
        "=========     tree(const float *, unsigned long, float *, float *)+0x170 in /tmp/x/minmax.cu:9\n"
        "=========     [2540 hazards]\n"
        "========= \n";
    CHECK(first_race_report(wrapped) ==
          "Race reported between Read access at tree(const float *, unsigned long, float *, float *) in "
          "/tmp/x/minmax.cu:9; and Write access at tree(const float *, unsigned long, float *, float *) in "
          "/tmp/x/minmax.cu:9 [2540 hazards]");
    REQUIRE(race_diagnosis(wrapped));
    CHECK(race_diagnosis(wrapped)->summary == "compute-sanitizer racecheck: a write and a read on shared memory with "
                                              "no barrier between in tree: a read at minmax.cu:9 and a write at "
                                              "minmax.cu:9");
    CHECK(race_diagnosis(wrapped)->evidence ==
          std::vector<std::string>{"2540 hazards between these two lines in one launch"});

    const std::string two_writes =
        "========= Error: Race reported between Write access at tree(float *)+0x60 in minmax.cu:9\n"
        "=========     and Write access at tree(float *)+0x60 in minmax.cu:9 [124 hazards]\n";
    REQUIRE(race_diagnosis(two_writes));
    CHECK(race_diagnosis(two_writes)->summary == "compute-sanitizer racecheck: two writes on shared memory with no "
                                                 "barrier between in tree: a write at minmax.cu:9 and a write at "
                                                 "minmax.cu:9");

    const std::string in_one_warp =
        "========= Warning: (Warp Level Programming) Race reported between Write access at blelloch_blocks(float *)+0x5a0 in scan.cu:26\n"
        "=========     and Read access at blelloch_blocks(float *)+0x590 in scan.cu:26 [31 hazards]\n";
    const auto warp = race_diagnosis(in_one_warp);
    REQUIRE(warp);
    CHECK(warp->summary == "compute-sanitizer racecheck: a write and a read on shared memory between threads of one "
                           "warp, with no __syncwarp() between in blelloch_blocks: a write at scan.cu:26 and a read at "
                           "scan.cu:26");
}

TEST_CASE("memcheck's first error becomes a diagnosis with the kernel, the student's line and the index") {
    const auto found = first_sanitizer_error(SanitizerTool::memcheck, write_past_the_end, {"sum.cu"});
    REQUIRE(found);
    CHECK(found->kind == "memory");
    CHECK(found->summary ==
          "compute-sanitizer memcheck: an out-of-bounds write of 4 bytes in global memory in oob_write at sum.cu:8");
    CHECK(found->evidence ==
          std::vector<std::string>{"thread (232,0,0) of block (3,0,0)",
                                   "index 1000 of an array of 1000 elements of 4 bytes (the last is 999)"});
    CHECK(found->hint.find("guard every store with the bound") != std::string::npos);
    CHECK(found->tool_output.find("Invalid __global__ write of size 4 bytes") != std::string::npos);
    CHECK(found->tool_output.find("Host Frame") == std::string::npos);
}

TEST_CASE("a read past the end, an access to shared memory and one far from every array have their own words") {
    const std::string read =
        "========= Invalid __global__ read of size 4 bytes\n"
        "=========     at oob_read(const float *, float *, int)+0xc0 in samples.cu:12\n"
        "=========     by thread (231,0,0) in block (3,0,0)\n"
        "=========     Access to 0x7f0b28800fa0 is out of bounds\n"
        "=========     and is 1 bytes after the nearest allocation at 0x7f0b28800000 of size 4,000 bytes\n";
    const auto past_input = first_sanitizer_error(SanitizerTool::memcheck, read, {"sum.cu"});
    REQUIRE(past_input);
    CHECK(past_input->summary ==
          "compute-sanitizer memcheck: an out-of-bounds read of 4 bytes in global memory in oob_read at samples.cu:12");
    CHECK(past_input->hint.find("reads past the end") != std::string::npos);

    const std::string shared = "========= Invalid __shared__ read of size 4 bytes\n"
                               "=========     at shared_oob(float *)+0xc0 in samples.cu:29\n"
                               "=========     by thread (63,0,0) in block (0,0,0)\n"
                               "=========     Access to 0x500 is out of bounds\n";
    const auto in_shared = first_sanitizer_error(SanitizerTool::memcheck, shared, {"samples.cu"});
    REQUIRE(in_shared);
    CHECK(
        in_shared->summary ==
        "compute-sanitizer memcheck: an out-of-bounds read of 4 bytes in shared memory in shared_oob at samples.cu:29");
    CHECK(in_shared->evidence == std::vector<std::string>{"thread (63,0,0) of block (0,0,0)"});
    CHECK(in_shared->hint.find("__shared__ array") != std::string::npos);

    const std::string wild =
        "========= Invalid __global__ write of size 4 bytes\n"
        "=========     at wild_write(float *)+0x80 in samples.cu:14\n"
        "=========     by thread (0,0,0) in block (0,0,0)\n"
        "=========     Access to 0x80bea8800000 is out of bounds\n"
        "=========     and is 1,099,272,551,937 bytes after the nearest allocation at 0x7fbeb6c00000 of size 512 bytes\n";
    const auto far = first_sanitizer_error(SanitizerTool::memcheck, wild, {"samples.cu"});
    REQUIRE(far);
    CHECK(far->evidence.back() == "1099272551937 bytes past the end of the nearest allocation: far from every array");
}

TEST_CASE("an error in the submission's file comes before one elsewhere, and an API error only when alone") {
    const std::string harness_first = "========= Invalid __global__ read of size 4 bytes\n"
                                      "=========     at compare(const float *)+0x10 in harness.cu:40\n"
                                      "=========     by thread (0,0,0) in block (0,0,0)\n"
                                      "=========     Access to 0x10 is out of bounds\n"
                                      "========= \n" +
                                      write_past_the_end;
    const auto found = first_sanitizer_error(SanitizerTool::memcheck, harness_first, {"sum.cu"});
    REQUIRE(found);
    CHECK(found->summary.find("at sum.cu:8") != std::string::npos);

    const std::string api_only =
        "========= Program hit cudaErrorIllegalAddress (error 700) due to \"an illegal memory access was encountered\" "
        "on CUDA API call to cudaDeviceSynchronize.\n"
        "=========     Saved host backtrace up to driver entry point at error\n";
    const auto api = first_sanitizer_error(SanitizerTool::memcheck, api_only, {"sum.cu"});
    REQUIRE(api);
    CHECK(api->summary.rfind("compute-sanitizer memcheck: program hit cudaErrorIllegalAddress (error 700)", 0) == 0);
    CHECK_FALSE(first_sanitizer_error(SanitizerTool::memcheck,
                                      "========= COMPUTE-SANITIZER\n"
                                      "========= ERROR SUMMARY: 0 errors\n",
                                      {"sum.cu"}));
}

TEST_CASE("initcheck names a read of memory nothing wrote, in the submission's code only") {
    const std::string output = "========= COMPUTE-SANITIZER\n"
                               "========= Uninitialized __global__ memory read of size 4 bytes\n"
                               "=========     at uninit_read(const float *, float *, int)+0xc0 in sum.cu:17\n"
                               "=========     by thread (0,0,0) in block (2,0,0)\n"
                               "=========     Address 0x7f0e4e800800\n"
                               "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
                               "=========         Host Frame: main [0x92d8] in samples\n";
    const auto found = first_sanitizer_error(SanitizerTool::initcheck, output, {"sum.cu"});
    REQUIRE(found);
    CHECK(found->kind == "uninitialized");
    CHECK(found->summary == "compute-sanitizer initcheck: a read of 4 bytes of global memory that nothing wrote in "
                            "uninit_read at sum.cu:17");
    CHECK(found->evidence == std::vector<std::string>{"thread (0,0,0) of block (2,0,0)"});
    // The grader's own kernels read outputs nothing wrote: not the submission's error.
    CHECK_FALSE(first_sanitizer_error(SanitizerTool::initcheck, output, {"dot.cu"}));
}

TEST_CASE("synccheck names a barrier that not every thread reaches") {
    const std::string output = "========= Barrier error detected. Divergent thread(s) in block\n"
                               "=========     at tree(float *)+0x2a0 in dot.cu:21\n"
                               "=========     by thread (64,0,0) in block (1,0,0)\n";
    const auto found = first_sanitizer_error(SanitizerTool::synccheck, output, {"dot.cu"});
    REQUIRE(found);
    CHECK(found->kind == "barrier");
    CHECK(found->summary == "compute-sanitizer synccheck: a barrier that not every thread of the block reaches "
                            "(Divergent thread(s) in block) in tree at dot.cu:21");
}

TEST_CASE("each tool's command asks for the error exit code and a bounded report") {
    CHECK(sanitizer_command("cs", SanitizerTool::memcheck) ==
          std::vector<std::string>{"cs", "--tool", "memcheck", "--leak-check", "no", "--report-api-errors", "no",
                                   "--error-exitcode", "86", "--print-limit", "10"});
    CHECK(sanitizer_command("cs", SanitizerTool::racecheck) ==
          std::vector<std::string>{"cs", "--tool", "racecheck", "--racecheck-report", "analysis", "--check-device-heap",
                                   "no", "--report-api-errors", "no", "--error-exitcode", "86", "--print-limit",
                                   "100"});
}

TEST_CASE("racecheck's summary says how many reports it left out past its print limit; the last summary counts") {
    CHECK(race_reports_left_out("========= RACECHECK SUMMARY: 10 hazards displayed (30 errors, 0 warnings)\n") == 20);
    CHECK(race_reports_left_out("========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n") == 0);
    CHECK(race_reports_left_out("========= RACECHECK SUMMARY: 100 hazards displayed (1,204 errors, 2 warnings)\n") ==
          1106);
    // A kernel's printf comes before the program's end, and the tool's summary after it.
    CHECK(race_reports_left_out("RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
                                "========= RACECHECK SUMMARY: 2 hazards displayed (5 errors, 0 warnings)\n") == 3);
    CHECK_FALSE(race_reports_left_out("========= Error: Race reported between Write access at tree\n"));
}

TEST_CASE("compute-sanitizer said something where any of its lines but the banner says anything") {
    CHECK_FALSE(sanitizer_said_anything(""));
    CHECK_FALSE(
        sanitizer_said_anything("========= COMPUTE-SANITIZER\nsum = 12\n\ncugrade-case-1 races/n=1\n=========\n"));
    CHECK(sanitizer_said_anything("========= COMPUTE-SANITIZER\n========= Error: Race reported between Write access "
                                  "at tree(float *)+0x2f0 in sum.cu:16\n"));
    CHECK(sanitizer_said_anything("========= Target application returned an error\n"));
    CHECK(sanitizer_said_anything("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"));
    // A kernel's printf of such a line counts too: the job is then left to a fresh racecheck.
    CHECK(sanitizer_said_anything("result: ========= Error: none\n"));
}
