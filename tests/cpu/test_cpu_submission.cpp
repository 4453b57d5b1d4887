// Submissions of the fixture corpus compiled for the CPU (their launches rewritten by the grader, the rest of CUDA
// from cuda_on_cpu.hpp) with the system's C++ compiler, and run as real processes under each schedule.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>
#include <string>

#include "catch.hpp"
#include "cpu_build.hpp"
#include "cpu_fault.hpp"
#include "cpu_source.hpp"
#include "cugrade/exercise.hpp"
#include "cugrade/rubric.hpp"
#include "cugrade/run.hpp"
#include "scratch_dir.hpp"

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
    const fs::path program = build_for_cpu("matadd", source_dir / "tests/fixtures/matadd/no_bounds_check", matadd_driver);
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
    const fs::path program = build_for_cpu("matadd", source_dir / "tests/fixtures/matadd/no_bounds_check", matadd_driver);
    const Ran ran = run_under(program, "forward", "17 17");
    const std::string said = ran.output.substr(ran.output.find('\n') + 1, ran.output.find("\nthen:") - ran.output.find('\n') - 1);
    cugrade::RunResult run;
    run.cases.push_back({cugrade::Status::cuda_error, "call 1 of 1: cudaErrorIllegalAddress (" + said + ")"});
    run.cases.push_back({cugrade::Status::passed, ""});
    cugrade::explain_cpu_faults(program, {"matadd.cpp"}, run);
    INFO(said);
    CHECK(run.cases[0].status == cugrade::Status::memory_error);
    CHECK(run.cases[0].detail == "the CPU self-check stopped an access outside every array: a read 0 bytes past the end "
                                 "of an array of 1156 bytes in add_2d at matadd.cpp:11");
    REQUIRE(run.cases[0].diagnosis);
    CHECK(run.cases[0].diagnosis->summary ==
          "CPU self-check: an out-of-bounds read in global memory in add_2d at matadd.cpp:11");
    CHECK(run.cases[0].diagnosis->evidence ==
          std::vector<std::string>{"thread (0, 1, 0) of block (0, 1, 0)", "0 bytes past the end of an array of 1156 bytes"});
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
        CHECK(fs::is_regular_file(results[i].program));
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
    const cugrade::RunResult run = cugrade::run_cases_on_cpu(built.program, cases, options, {"forward"});
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
