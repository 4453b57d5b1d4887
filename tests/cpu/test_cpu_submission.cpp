// Submissions of the fixture corpus compiled for the CPU (their launches rewritten by the grader, the rest of CUDA
// from cuda_on_cpu.hpp) with the system's C++ compiler, and run as real processes under each schedule; and whole
// CPU self-checks, as `cugrade check --cpu` makes them (the nvcc build and its static checks first, then the CPU
// build's checker and runner), of correct, wrong and hostile submissions (tests/cpu/hostile/).
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>
#include <string>

#include "catch.hpp"
#include "cpu/cpu_build.hpp"
#include "cpu/cpu_fault.hpp"
#include "cpu/cpu_source.hpp"
#include "course/exercise.hpp"
#include "grading/grading.hpp"
#include "report/report.hpp"
#include "course/rubric.hpp"
#include "build/toolchain.hpp"
#include "run/run.hpp"
#include "base/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path source_dir = CUGRADE_SOURCE_DIR;

std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

struct Ran {
    int status = -1;
    std::string output;
};

Ran run(const std::string& command) {
    Ran ran;
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    while (const std::size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) {
        ran.output.append(buffer, got);
    }
    const int status = ::pclose(pipe);
    ran.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return ran;
}

// A program that calls the sum exercise's entry point on n values of `value`, and prints the result.
constexpr const char* sum_driver = R"(
#include <cmath>
#include <cstdlib>
#include <vector>
#include "sum.h"
int main(int argc, char** argv) {
    const std::size_t n = std::strtoull(argv[1], nullptr, 10);
    std::vector<float> input(n, 1.0f), scratch(SUM_SCRATCH_FLOATS, NAN);
    float result = NAN;
    sum(input.data(), n, &result, scratch.data(), nullptr);
    const cudaError_t error = cudaGetLastError();
    if (error == cudaErrorLaunchFailure) {
        std::printf("fault: %s\n", cudaGetErrorString(error));
        return 3;
    }
    std::printf("%.1f %s\n", result, cudaGetErrorName(error));
}
)";

// The submission in `folder` compiled for the CPU, linked with the driver; returns the program's path.
fs::path build_for_cpu(const std::string& exercise, const fs::path& folder, const std::string& driver) {
    const fs::path work = fs::temp_directory_path() / ("cugrade-cpu-" + exercise + "-" + folder.filename().string());
    fs::create_directories(work);
    std::ofstream(work / (exercise + ".cpp")) << cugrade::rewrite_for_cpu(read(folder / (exercise + ".cu")));
    std::ofstream(work / "driver.cpp") << driver;
    const fs::path common = source_dir / "exercises" / "common";
    const std::string command = "c++ -std=c++20 -O1 -g1 -I " + (common / "cpu" / "include").string() + " -I " +
                                common.string() + " -I " + (source_dir / "exercises" / exercise).string() + " " +
                                (work / (exercise + ".cpp")).string() + " " + (work / "driver.cpp").string() + " " +
                                CUGRADE_CPU_RUNTIME + " " + CUGRADE_BOOST_CONTEXT + " -o " +
                                (work / "program").string();
    const Ran built = run(command);
    INFO(built.output);
    REQUIRE(built.status == 0);
    return work / "program";
}

Ran run_under(const fs::path& program, const std::string& schedule, const std::string& arguments) {
    return run("CUGRADE_CPU_SCHEDULE=" + schedule + " " + program.string() + " " + arguments);
}

}  // namespace

TEST_CASE("the seed's sum runs on the CPU and sums right under every schedule") {
    const fs::path program = build_for_cpu("sum", source_dir / "tests/fixtures/sum/seed_tree", sum_driver);
    for (const char* schedule : {"forward", "reverse", "shuffled:3"}) {
        for (const char* n : {"0", "1", "1025", "100000"}) {
            const Ran ran = run_under(program, schedule, n);
            INFO(schedule << " n=" << n << ": " << ran.output);
            CHECK(ran.status == 0);
            CHECK(ran.output == std::string(n) + ".0 cudaSuccess\n");
        }
    }
}

TEST_CASE("sums with atomics and with warp shuffles run right on the CPU") {
    for (const char* fixture : {"atomics", "warp_shuffle", "atomic_per_element"}) {
        const fs::path program = build_for_cpu("sum", source_dir / "tests/fixtures/sum" / fixture, sum_driver);
        for (const char* schedule : {"forward", "shuffled:5"}) {
            const Ran ran = run_under(program, schedule, "70001");
            INFO(fixture << " " << schedule << ": " << ran.output);
            CHECK(ran.output == "70001.0 cudaSuccess\n");
        }
    }
}

TEST_CASE("a tree without its barriers sums differently as the schedule changes") {
    const fs::path program = build_for_cpu("sum", source_dir / "tests/fixtures/sum/missing_syncthreads", sum_driver);
    const Ran forward = run_under(program, "forward", "4099");
    const Ran reverse = run_under(program, "reverse", "4099");
    INFO(forward.output << reverse.output);
    CHECK(forward.status == 0);
    CHECK(reverse.status == 0);
    CHECK(forward.output != reverse.output);
}

// A program that adds two rows x cols matrices with the matadd exercise's entry point, its arrays from cudaMalloc, and
// prints what CUDA said then and after.
constexpr const char* matadd_driver = R"(
#include <cstdlib>
#include "matadd.h"
int main(int argc, char** argv) {
    const std::size_t rows = std::strtoull(argv[1], nullptr, 10), cols = std::strtoull(argv[2], nullptr, 10);
    float *a, *b, *c;
    cudaMalloc(&a, rows * cols * sizeof(float));
    cudaMalloc(&b, rows * cols * sizeof(float));
    cudaMalloc(&c, rows * cols * sizeof(float));
    matadd(a, b, rows, cols, c, nullptr);
    const cudaError_t error = cudaGetLastError();
    std::printf("%s\n%s\n", cudaGetErrorName(error), cudaGetErrorString(error));
    std::printf("then: %s %s\n", cudaGetErrorName(cudaGetLastError()), cudaGetErrorName(cudaMemset(a, 0, 4)));
}
)";

TEST_CASE("a read past the end of an array stops the kernel there, with the kernel, the thread and the array") {
    const fs::path program =
        build_for_cpu("matadd", source_dir / "tests/fixtures/matadd/no_bounds_check", matadd_driver);
    const Ran ran = run_under(program, "forward", "17 17");
    INFO(ran.output);
    CHECK(ran.status == 0);
    // Block (0, 1, 0) holds rows 16 to 31: its thread (0, 1, 0), row 17, reads a[289], the first float after the array
    // of 17 x 17 (the threads of row 16 past column 16 land inside it, in the next row).
    CHECK(ran.output.rfind("cudaErrorIllegalAddress\nan illegal memory access was encountered: a read 0 bytes past "
                           "the end of an array of 1156 bytes in add_2d, thread (0, 1, 0) of block (0, 1, 0) "
                           "[cugrade-cpu-fault {",
                           0) == 0);
    // As on the GPU, the error stays: the context is spoiled.
    CHECK(ran.output.find("then: cudaErrorIllegalAddress cudaErrorIllegalAddress\n") != std::string::npos);
    // Where the sides are multiples of the tile, nothing strays.
    const Ran fits = run_under(program, "forward", "32 16");
    CHECK(fits.output.rfind("cudaSuccess\n", 0) == 0);
}

TEST_CASE("the grader turns a memory fault's facts into a memory error at the student's line") {
    const fs::path program =
        build_for_cpu("matadd", source_dir / "tests/fixtures/matadd/no_bounds_check", matadd_driver);
    const Ran ran = run_under(program, "forward", "17 17");
    const std::string said =
        ran.output.substr(ran.output.find('\n') + 1, ran.output.find("\nthen:") - ran.output.find('\n') - 1);
    cugrade::RunResult run;
    run.cases.push_back({cugrade::Status::cuda_error, "call 1 of 1: cudaErrorIllegalAddress (" + said + ")"});
    run.cases.push_back({cugrade::Status::passed, ""});
    cugrade::explain_cpu_faults(program, {"matadd.cpp"}, run);
    INFO(said);
    CHECK(run.cases[0].status == cugrade::Status::memory_error);
    CHECK(run.cases[0].detail ==
          "the CPU self-check stopped an access outside every array: a read 0 bytes past the end "
          "of an array of 1156 bytes in add_2d at matadd.cpp:11");
    REQUIRE(run.cases[0].diagnosis);
    CHECK(run.cases[0].diagnosis->summary ==
          "CPU self-check: an out-of-bounds read in global memory in add_2d at matadd.cpp:11");
    CHECK(run.cases[0].diagnosis->evidence ==
          std::vector<std::string>{"thread (0, 1, 0) of block (0, 1, 0)",
                                   "0 bytes past the end of an array of 1156 bytes"});
    CHECK(run.cases[1].status == cugrade::Status::passed);
}

TEST_CASE("self-checks building one exercise's course objects at once all link, and share one cache entry") {
    const cugrade::Course course = cugrade::open_course(source_dir);
    const cugrade::Exercise exercise = cugrade::load_exercise(course, "sum");
    const cugrade::SubmissionFile submission =
        cugrade::read_submission(source_dir / "tests/fixtures/sum/seed_tree", "sum.cu");
    cugrade::ScratchDir cache("cpu-cache");
    constexpr int builds = 3;
    std::vector<cugrade::ScratchDir> work(builds);
    std::vector<cugrade::CpuBuildResult> results(builds);
    std::vector<std::string> errors(builds);
    std::vector<std::thread> threads;
    for (int i = 0; i < builds; ++i) {
        threads.emplace_back([&, i] {
            cugrade::CpuBuildOptions options;
            options.work_dir = work[i].path();
            options.cache_dir = cache.path();
            try {
                results[i] = cugrade::build_for_cpu(exercise, submission, options);
            } catch (const std::exception& e) {
                errors[i] = e.what();
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    for (int i = 0; i < builds; ++i) {
        INFO(errors[i] << results[i].diagnostics);
        CHECK(results[i].ok);
        CHECK(fs::is_regular_file(results[i].checker));
        CHECK(fs::is_regular_file(results[i].runner));
    }
    // One entry, no staging folder left behind.
    std::vector<std::string> entries;
    for (const auto& item : fs::directory_iterator(cache.path())) {
        entries.push_back(item.path().filename().string());
    }
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].rfind("cpu-sum-", 0) == 0);
}

TEST_CASE("a launch refused for its shape fails its case, and the cases after it run on in the same process") {
    const cugrade::Course course = cugrade::open_course(source_dir);
    const cugrade::Exercise exercise = cugrade::load_exercise(course, "matadd");
    const cugrade::Rubric rubric = cugrade::load_exercise_rubric(exercise, source_dir / "rubrics" / "matadd.yaml");
    std::vector<cugrade::CasePlan> cases;
    for (const cugrade::CasePlan& plan : cugrade::plan_cases(rubric)) {
        if (!plan.timed && plan.size() <= (std::uint64_t{1} << 16)) {
            cases.push_back(plan);
        }
    }
    cugrade::ScratchDir work("cpu-work"), cache("cpu-cache");
    cugrade::CpuBuildOptions build;
    build.work_dir = work.path();
    build.cache_dir = cache.path();
    // A grid of no blocks wherever a side is shorter than its tile of 16: cudaErrorInvalidConfiguration.
    const cugrade::CpuBuildResult built = cugrade::build_for_cpu(
        exercise, cugrade::read_submission(source_dir / "tests/fixtures/matadd/grid_rounded_down", "matadd.cu"), build);
    INFO(built.diagnostics);
    REQUIRE(built.ok);
    cugrade::RunOptions options;
    options.work_dir = work.path();
    options.runner = built.runner;
    const cugrade::RunResult run = cugrade::run_cases_on_cpu(built.checker, cases, options, {"forward"});
    int refused = 0, answered_after_refused = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        INFO(cases[i].id << ": " << run.cases[i].detail);
        if (run.cases[i].status == cugrade::Status::cuda_error) {
            CHECK(run.cases[i].detail.find("cudaErrorInvalidConfiguration") != std::string::npos);
            ++refused;
        } else {
            CHECK((run.cases[i].status == cugrade::Status::passed ||
                   run.cases[i].status == cugrade::Status::wrong_answer));
            answered_after_refused += refused > 0 ? 1 : 0;
        }
    }
    CHECK(refused >= 3);
    CHECK(answered_after_refused >= 1);
    CHECK(run.processes == 1);
}

namespace {

// `folder`'s sum.cu checked as `cugrade check --cpu` checks it, with the small rubric tests/cpu/sum-cpu.yaml, each case
// given `case_seconds` on the CPU at least. The builds share the tests' cache (the course's harnesses, for nvcc and
// for the CPU, are built once).
cugrade::ExerciseReport check_on_cpu(const fs::path& folder, double case_seconds = 60.0) {
    const cugrade::Course course = cugrade::open_course(source_dir);
    cugrade::GradingSetup setup;
    setup.cache_dir = CUGRADE_TEST_CACHE;
    setup.submissions = folder;
    setup.cpu_self_check = cugrade::CpuSelfCheck::always;
    cugrade::GradingContext context = cugrade::make_grading_context(course, setup);
    context.cpu_case_seconds = case_seconds;
    const cugrade::Exercise exercise = cugrade::load_exercise(course, "sum");
    const cugrade::Rubric rubric = cugrade::load_exercise_rubric(exercise, source_dir / "tests/cpu/sum-cpu.yaml");
    return cugrade::grade_exercise(context, exercise, rubric, cugrade::read_submission(folder, "sum.cu"));
}

const fs::path hostile = source_dir / "tests/cpu/hostile/sum";

// A whole self-check starts with the nvcc build, as `cugrade check --cpu` does: without nvcc these tests say so and
// check nothing.
bool nvcc_found() {
    try {
        cugrade::find_toolchain(std::nullopt);
        return true;
    } catch (const std::exception& e) {
        WARN("no whole CPU self-check without nvcc: " << e.what());
        return false;
    }
}

std::string report_of(const cugrade::ExerciseReport& report) {
    std::string text = report.build.diagnostics;
    for (const auto& c : report.cases) {
        text += c.plan.id + ": " + cugrade::display_name(c.status) + ": " + c.detail + "\n";
    }
    return text;
}

// Every case the CPU ran (all but the speed test) has `status`, and its detail contains `detail`. The speed test is
// skipped on the CPU, unless the submission was rejected: then it keeps nothing, the speed test included.
void every_cpu_case(const cugrade::ExerciseReport& report, cugrade::Status status, const std::string& detail) {
    INFO(report_of(report));
    for (const auto& c : report.cases) {
        if (c.plan.timed && status != cugrade::Status::rejected) {
            CHECK(c.status == cugrade::Status::skipped);
            continue;
        }
        CHECK(c.status == status);
        CHECK(c.detail.find(detail) != std::string::npos);
    }
}

}  // namespace

TEST_CASE("a correct sum passes every case of the CPU self-check, its runner a process apart from the checks") {
    if (!nvcc_found()) {
        return;
    }
    const cugrade::ExerciseReport report = check_on_cpu(source_dir / "tests/fixtures/sum/seed_tree");
    every_cpu_case(report, cugrade::Status::passed, "");
    const auto said = [&](const std::string& line) {
        return std::find(report.protections.begin(), report.protections.end(), line) != report.protections.end();
    };
    INFO(report.protections.size());
    CHECK(said("CPU self-check: the submission runs in a process of its own, on the CPU, apart from the checks and "
               "the reference"));
    CHECK(said("seccomp (submission's process): no new processes, no network"));
}

TEST_CASE("a submission that calls the reference's entry point in the CPU build does not link: the runner has none") {
    if (!nvcc_found()) {
        return;
    }
    const cugrade::ExerciseReport report = check_on_cpu(hostile / "calls_reference");
    CHECK_FALSE(report.build.ok);
    CHECK(report.build.step == "link for the CPU");
    CHECK(report.build.diagnostics.find("undefined reference to `cugrade_reference_sum'") != std::string::npos);
    for (const auto& c : report.cases) {
        CHECK(c.status == cugrade::Status::build_failed);
        CHECK(c.detail == "the submission did not link for the CPU self-check; see the compiler's messages below");
    }
}

TEST_CASE("a weak reference to the reference's entry point finds nothing in the runner: every sum is wrong") {
    if (!nvcc_found()) {
        return;
    }
    every_cpu_case(check_on_cpu(hostile / "calls_reference_weakly"), cugrade::Status::wrong_answer, "got 0");
}

TEST_CASE("a constructor that copies the token and the result channel's descriptor finds neither in the runner") {
    if (!nvcc_found()) {
        return;
    }
    // Its descriptor 3 is the runner's own channel to the checker: its records arrive there, as no call's results.
    const cugrade::ExerciseReport report = check_on_cpu(hostile / "forges_from_constructor");
    every_cpu_case(report, cugrade::Status::rejected,
                   "its process sent the grader something other than its call's "
                   "results");
}

TEST_CASE("a definition of the harness's inline check changes nothing: the runner has no harness") {
    if (!nvcc_found()) {
        return;
    }
    every_cpu_case(check_on_cpu(hostile / "defines_check"), cugrade::Status::wrong_answer, "got 0");
}

TEST_CASE("a kernel that never ends: the CPU self-check stops once cases of two sizes in a row time out") {
    if (!nvcc_found()) {
        return;
    }
    const cugrade::ExerciseReport report = check_on_cpu(hostile / "never_ends", 0.0);
    INFO(report_of(report));
    for (const auto& c : report.cases) {
        if (c.plan.id == "cpu/n=1/positive" || c.plan.id == "cpu/n=1000/positive") {
            CHECK(c.status == cugrade::Status::timed_out);
        } else if (!c.plan.timed) {
            CHECK(c.status == cugrade::Status::skipped);
            CHECK(c.detail == "not run: cases of 2 sizes in a row timed out, and the CPU self-check stops there (a "
                              "kernel that never ends, or threads that wait for one another forever, would hold every "
                              "case to its limit); fix that, and the next check runs every case");
        }
    }
}

TEST_CASE("a read just past the input stops at the student's line, in the runner, as a memory error") {
    if (!nvcc_found()) {
        return;
    }
    const cugrade::ExerciseReport report = check_on_cpu(hostile / "reads_past_input");
    INFO(report_of(report));
    bool seen = false;
    for (const auto& c : report.cases) {
        if (c.plan.id == "cpu/n=1025/positive") {
            seen = true;
            CHECK(c.status == cugrade::Status::memory_error);
            CHECK(c.detail == "the CPU self-check stopped an access outside every array: a read 0 bytes past the end "
                              "of an array of 4100 bytes in partial_sums at sum.cu:11");
        }
    }
    CHECK(seen);
}

TEST_CASE("a tree without its barriers is a race under the CPU self-check's thread orders") {
    if (!nvcc_found()) {
        return;
    }
    const cugrade::ExerciseReport report = check_on_cpu(source_dir / "tests/fixtures/sum/missing_syncthreads");
    INFO(report_of(report));
    int races = 0;
    for (const auto& c : report.cases) {
        if (c.status == cugrade::Status::race) {
            ++races;
            CHECK(c.detail.rfind("the result depends on the order threads run in: ", 0) == 0);
        }
    }
    CHECK(races >= 1);
}

namespace {

const std::string host_read =
    "cudaMemcpy: reads device memory from the host; compute on the GPU and leave the results in the buffers you are "
    "given";

}  // namespace

TEST_CASE("a copy to the host the source shows is refused before the CPU self-check runs anything") {
    if (!nvcc_found()) {
        return;
    }
    const cugrade::ExerciseReport report = check_on_cpu(source_dir / "tests/hostile/sum/sums_on_host");
    INFO(report_of(report));
    REQUIRE(report.violations.size() == 1);
    CHECK(report.violations[0] == (source_dir / "tests/hostile/sum/sums_on_host/sum.cu").string() +
                                      ":12: copies to the host (cudaMemcpyDeviceToHost), which this exercise "
                                      "forbids (\"copy to the host\"): compute on the GPU and leave the results in "
                                      "the buffers you are given");
    for (const auto& c : report.cases) {
        CHECK(c.status == cugrade::Status::rejected);
        CHECK(c.detail == report.violations[0]);
    }
}

TEST_CASE("a copy to the host in the hidden case alone rejects every case of the CPU self-check, saying no more") {
    if (!nvcc_found()) {
        return;
    }
    const cugrade::ExerciseReport report = check_on_cpu(hostile / "reads_on_host_when_large");
    INFO(report_of(report));
    CHECK(report.violations.empty());
    for (const auto& c : report.cases) {
        INFO(c.plan.id);
        CHECK(c.status == cugrade::Status::rejected);
        CHECK(c.detail ==
              (c.plan.visibility == cugrade::Visibility::hidden ? host_read : cugrade::rejected_in_a_hidden_case));
        CHECK(c.points == 0.0);
    }
}

TEST_CASE("a cudaMemcpyDefault copy into host memory is refused on the CPU as the GPU's replay refuses it") {
    if (!nvcc_found()) {
        return;
    }
    const cugrade::ExerciseReport report = check_on_cpu(hostile / "copies_default_to_host");
    INFO(report_of(report));
    CHECK(report.violations.empty());
    for (const auto& c : report.cases) {
        CHECK(c.status == cugrade::Status::rejected);
        CHECK(c.detail == "cudaMemcpy: copies to memory outside the output and scratch buffers it is given");
    }
}
