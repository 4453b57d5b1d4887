// The static checks on a built submission, with the real nvcc and binutils: what it defines, what it calls, and
// whether any of its code runs before main. Messages are asserted verbatim: they are what a student reads.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "catch.hpp"
#include "build/build.hpp"
#include "base/gpu.hpp"
#include "inspect/inspect.hpp"
#include "course/submission.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

const char* const correct_kernel = R"(
__global__ void add_all(const float* in, std::size_t n, float* out) {
    float total = 0.0f;
    for (std::size_t i = 0; i < n; ++i) total += in[i];
    out[0] = total;
}
)";

const char* const entry = R"(
void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t stream) {
    add_all<<<1, 1, 0, stream>>>(input, n, result);
}
)";

// Builds `source` as the sum exercise's sum.cu and inspects it with the default rules.
std::vector<Finding> inspect(const std::string& source, const ApiRules& rules = {}) {
    const fs::path folder = fs::temp_directory_path() / "cugrade-test-inspect";
    fs::create_directories(folder);
    const fs::path file = folder / "sum.cu";
    std::ofstream(file) << source;
    const Exercise exercise = load_exercise(Course{CUGRADE_SOURCE_DIR}, "sum");
    const Toolchain toolchain = find_toolchain(std::nullopt);
    BuildOptions options;
    options.arch = fallback_arch;
    options.cache_dir = CUGRADE_TEST_CACHE;
    options.sandbox.enabled = true;
    const SubmissionFile submission = read_submission(folder, "sum.cu");
    const BuildResult build = build_submission(exercise, submission, toolchain, options);
    INFO(build.diagnostics);
    REQUIRE(build.ok);
    return inspect_submission(build, submission, exercise, rules, toolchain).findings;
}

struct Built {
    SubmissionFile submission;
    BuildResult build;
    Exercise exercise;
    std::string shown(int line) const { return submission.shown.string() + ":" + std::to_string(line); }
};

// Builds `source` as `file` of `exercise_name`, whether or not it links.
Built build_as(const std::string& exercise_name, const std::string& file, const std::string& source) {
    const fs::path folder = fs::temp_directory_path() / "cugrade-test-inspect-libraries" / exercise_name;
    fs::create_directories(folder);
    std::ofstream(folder / file) << source;
    const Toolchain toolchain = find_toolchain(std::nullopt);
    BuildOptions options;
    options.arch = fallback_arch;
    options.cache_dir = CUGRADE_TEST_CACHE;
    options.sandbox.enabled = true;
    Built built{read_submission(folder, file), {}, load_exercise(Course{CUGRADE_SOURCE_DIR}, exercise_name)};
    built.build = build_submission(built.exercise, built.submission, toolchain, options);
    return built;
}

std::vector<Finding> inspect_built(const Built& built) {
    INFO(built.build.diagnostics);
    REQUIRE(built.build.ok);
    const Toolchain toolchain = find_toolchain(std::nullopt);
    auto findings = inspect_submission(built.build, built.submission, built.exercise, {}, toolchain).findings;
    for (const auto& finding : findings) {
        UNSCOPED_INFO(finding.message);
    }
    return findings;
}

std::string source_of(const fs::path& file) {
    std::ifstream in(file);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A fixture's submission, by its path under tests/fixtures.
std::string fixture_source(const std::string& path) {
    return source_of(fs::path(CUGRADE_SOURCE_DIR) / "tests/fixtures" / path);
}

std::string shown(int line) {
    return (fs::temp_directory_path() / "cugrade-test-inspect" / "sum.cu").string() + ":" + std::to_string(line);
}

}  // namespace

TEST_CASE("a submission with its own kernels, helpers and __device__ variables passes the checks") {
    const auto findings = inspect(std::string("__device__ unsigned blocks_done;\nfloat host_side_table[4];\n") +
                                  "float helper(float x) { return x; }\n" + correct_kernel + entry);
    CHECK(findings.empty());
}

// A strong definition does not even link against the static CUDA runtime; a weak one would, and would win.
TEST_CASE("defining a function the grader's program has is rejected, with the line") {
    const auto findings = inspect(std::string(correct_kernel) + entry +
                                  "__attribute__((weak)) cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t,\n"
                                  "                                                       cudaEvent_t) {\n"
                                  "    *ms = 0.001f;\n    return cudaSuccess;\n}\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].rule == "defines");
    CHECK(findings[0].message == shown(11) +
                                     ": defines cudaEventElapsedTime, which the grader's program already has: a "
                                     "submission may define only sum() and its own helpers");
}

TEST_CASE("calling a forbidden C function is rejected, with the reason") {
    const auto findings =
        inspect(std::string("#include <unistd.h>\n") + correct_kernel +
                "void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t stream) {\n"
                "    if (n == 12345) fork();\n    add_all<<<1, 1, 0, stream>>>(input, n, result);\n}\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message ==
          shown(9) + ": calls fork(), which submissions may not use: a submission starts no processes or threads");
}

TEST_CASE("a rubric's own list of forbidden functions adds to the defaults") {
    const std::string source = std::string(correct_kernel) +
                               "void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t s) {\n"
                               "    add_all<<<1, 1, 0, s>>>(input, n, result);\n    cudaDeviceSynchronize();\n}\n";
    CHECK(inspect(source).empty());
    ApiRules rules;
    rules.forbidden_functions = {"cudaDeviceSynchronize"};
    const auto findings = inspect(source, rules);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message ==
          shown(9) + ": calls cudaDeviceSynchronize(), which submissions may not use: this exercise forbids it");
}

TEST_CASE("using CUB is rejected at its #include, with the contract's words") {
    const auto findings = inspect(R"(#include <cub/device/device_reduce.cuh>
void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    std::size_t bytes = SUM_SCRATCH_FLOATS * sizeof(float);
    cub::DeviceReduce::Sum(scratch, bytes, input, result, static_cast<int>(n), stream);
}
)");
    // Then the calls CUB's own code makes, which only an exercise that allows CUB allows.
    REQUIRE_FALSE(findings.empty());
    CHECK(findings[0].rule == "forbidden-library");
    CHECK(findings[0].message == shown(1) + ": includes <cub/device/device_reduce.cuh> (CUB), which this exercise "
                                            "forbids (\"call libraries that compute the sum for you (CUB, Thrust, "
                                            "cuBLAS)\"): write the kernels yourself");
}

TEST_CASE("a correct submission in ordinary C++ is never rejected") {
    // Standard-library strings, conversions, containers, algorithms, lambdas, printf and iostream debugging, a
    // global object with a constructor, a static local: the compiler's own instantiations of names the program has.
    const auto findings = inspect(R"(#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>
__global__ void add_all(const float* in, std::size_t n, float* out) {
    float total = 0.0f;
    for (std::size_t i = 0; i < n; ++i) total += in[i];
    out[0] = total;
}
static std::map<int, std::string> seen;
std::vector<float> weights = {1.0f, 2.0f};
int calls() { static int count = 0; return ++count; }
template <class T> T twice(T x) { return x + x; }
void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t stream) {
    std::vector<int> v{3, 1, 2};
    std::sort(v.begin(), v.end(), [](int a, int b) { return a > b; });
    std::string label = std::to_string(n) + " items, " + std::to_string(twice(2.5));
    seen[calls()] = label;
    std::ostringstream text;
    text << label << " " << std::stoi("42") << " " << std::stod("1.5") << " " << std::sqrt(2.0);
    if (n == 12345) {
        printf("%s %d\n", text.str().c_str(), std::accumulate(v.begin(), v.end(), 0));
        std::cout << "debug " << n << std::endl;
    }
    add_all<<<1, 1, 0, stream>>>(input, n, result);
}
)");
    for (const auto& finding : findings) {
        INFO(finding.message);
    }
    CHECK(findings.empty());
}

TEST_CASE("code that would run before main runs when the grader calls, not before") {
    // Constructors are moved where the harness calls them (link_object.hpp): nothing to refuse, and the linked
    // program's map shows none of the submission's code among what the loader runs.
    CHECK(inspect(std::string(correct_kernel) + entry +
                  "__attribute__((constructor)) static void early() { std::getenv(\"PATH\"); }\n"
                  "__attribute__((constructor(101))) static void earlier() {}\n"
                  "__attribute__((destructor)) static void late() {}\n"
                  "struct Noisy { Noisy() { std::getenv(\"HOME\"); } };\nstatic Noisy noisy;\n"
                  "extern \"C\" __attribute__((constructor)) void __sti____cudaRegisterAll_1() {}\n")
              .empty());
}

TEST_CASE("code placed where the loader runs it, or resolved by it, is rejected") {
    auto findings =
        inspect(std::string(correct_kernel) + entry + "__attribute__((section(\".init\"))) void in_init() {}\n");
    REQUIRE_FALSE(findings.empty());
    CHECK(findings[0].rule == "runs-before-main");
    CHECK(findings[0].message == shown(11) + ": puts code in .init, which the loader runs around main: a submission's "
                                             "code may run only when the grader calls sum()");

    findings = inspect(std::string(correct_kernel) + entry +
                       "asm(\".section .preinit_array,\\\"aw\\\"\\n.quad 0\\n.text\");\n");
    REQUIRE_FALSE(findings.empty());
    CHECK(findings[0].rule == "runs-before-main");

    findings = inspect(std::string(correct_kernel) + entry +
                       "extern \"C\" void real() {}\n"
                       "extern \"C\" void (*pick())() { return real; }\n"
                       "extern \"C\" void chosen() __attribute__((ifunc(\"pick\")));\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == shown(13) + ": defines chosen as an indirect function, whose resolver the loader "
                                             "runs before main: a submission's code may run only when the grader "
                                             "calls sum()");

    findings = inspect(std::string(correct_kernel) + entry +
                       "__attribute__((section(\"my_table\"))) int table[4] = {1, 2, 3, 4};\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].rule == "section");
}

TEST_CASE("definitions that would replace what the program or its libraries have are rejected") {
    const std::string start = std::string(correct_kernel) + entry;
    // A weak definition of a C name the program takes from the C library.
    auto findings = inspect(
        start + "extern \"C\" __attribute__((weak)) void* malloc(std::size_t n) noexcept { return nullptr; }\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == shown(11) + ": defines malloc, which the C library (libc.so.6) already has: a "
                                             "submission may define only sum() and its own helpers");
    // A name crt calls before main if it is defined.
    findings = inspect(start + "extern \"C\" void __gmon_start__() {}\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].rule == "defines");
    // A function of the C library that the program does not call itself (the driver, say, may).
    findings = inspect(start + "extern \"C\" int getloadavg(double*, int) { return 0; }\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == shown(11) + ": defines getloadavg, which the C library (libc.so.6) already has: a "
                                             "submission may define only sum() and its own helpers");
    // A replacement of the global operator new.
    findings = inspect(start + "#include <new>\nvoid* operator new(std::size_t n) { return std::malloc(n); }\n");
    REQUIRE_FALSE(findings.empty());
    CHECK(findings[0].rule == "defines");
}

TEST_CASE("calls outside what an exercise needs are rejected, weak references and internal names too") {
    const std::string start = std::string(correct_kernel) +
                              "void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t s) {\n"
                              "    add_all<<<1, 1, 0, s>>>(input, n, result);\n";
    auto findings = inspect("#include <sys/mman.h>\n" + start + "    if (n == 7) mprotect(nullptr, 0, 0);\n}\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == shown(10) + ": calls mprotect(), which submissions may not use: a submission does "
                                             "not inspect or change its process's memory");
    findings = inspect("extern \"C\" int getpid() __attribute__((weak));\n" + start +
                       "    if (getpid) result[1] = getpid();\n}\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == shown(1) + ": calls getpid(), which submissions may not use: it is not among the "
                                            "functions a CUDA exercise needs (docs/rubric.md lists them); an "
                                            "instructor can allow it in the rubric");
    findings = inspect("extern \"C\" int __open64(const char*, int, ...);\n" + start +
                       "    if (n == 7) __open64(\"/etc/passwd\", 0);\n}\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].symbol == "__open64()");
    findings = inspect("#include <fstream>\n" + start + "    if (n == 7) std::ofstream(\"out.txt\") << n;\n}\n");
    REQUIRE_FALSE(findings.empty());
    CHECK_THAT(findings[0].message, contains_text("a submission reads and writes no files"));
    findings = inspect("#include <thread>\n" + start + "    if (n == 7) std::thread([] {}).join();\n}\n");
    REQUIRE_FALSE(findings.empty());
    CHECK_THAT(findings[0].message, contains_text("a submission starts no processes or threads"));

    ApiRules rules;
    rules.allowed_functions = {"getpid"};
    CHECK(inspect("extern \"C\" int getpid() __attribute__((weak));\n" + start +
                      "    if (getpid) result[1] = getpid();\n}\n",
                  rules)
              .empty());
}

// Libraries are found by what the submission's own lines include (the compiler's dependency list), whatever of them
// its object shows: block-level CUB in device code leaves no host name at all.
TEST_CASE("device-only cub::BlockReduce in a sum is rejected at its #include") {
    const Built built = build_as("sum", "sum.cu", fixture_source("sum/cub_block_reduce_device/sum.cu"));
    const auto findings = inspect_built(built);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].rule == "forbidden-library");
    CHECK(findings[0].symbol == "CUB");
    CHECK(findings[0].message == built.shown(3) +
                                     ": includes <cub/block/block_reduce.cuh> (CUB), which this exercise forbids "
                                     "(\"call libraries that compute the sum for you (CUB, Thrust, cuBLAS)\"): write "
                                     "the kernels yourself");
}

TEST_CASE("device-only cub::BlockHistogram in a histogram is rejected at its #include") {
    const Built built =
        build_as("histogram", "histogram.cu", fixture_source("histogram/cub_block_histogram/histogram.cu"));
    const auto findings = inspect_built(built);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == built.shown(3) +
                                     ": includes <cub/block/block_histogram.cuh> (CUB), which this exercise forbids "
                                     "(\"call libraries that count for you (CUB, Thrust)\"): write the kernels "
                                     "yourself");
}

TEST_CASE("cub::BlockScan in a scan is named CUB, not the Thrust its headers use") {
    const Built built = build_as("scan", "scan.cu", fixture_source("scan/cub_block_scan/scan.cu"));
    const auto findings = inspect_built(built);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == built.shown(6) +
                                     ": includes <cub/block/block_scan.cuh> (CUB), which this exercise forbids "
                                     "(\"call libraries that scan for you (CUB, Thrust)\"): write the kernels "
                                     "yourself");
}

TEST_CASE("a Thrust include is Thrust at its line, and the CUB it brings in is not a second finding") {
    const Built built = build_as("sum", "sum.cu", R"(#include "sum.h"
#include <cstdio>
#include <thrust/reduce.h>
#include <thrust/execution_policy.h>
void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t stream) {
    const float total = thrust::reduce(thrust::cuda::par.on(stream), input, input + n, 0.0f);
    cudaMemcpyAsync(result, &total, sizeof(float), cudaMemcpyHostToDevice, stream);
}
)");
    const auto findings = inspect_built(built);
    std::vector<std::string> libraries;
    for (const auto& finding : findings) {
        if (finding.rule == "forbidden-library") {
            libraries.push_back(finding.message);
        }
    }
    REQUIRE(libraries.size() == 1);
    CHECK(libraries[0] == built.shown(3) +
                              ": includes <thrust/reduce.h> (Thrust), which this exercise forbids (\"call libraries "
                              "that compute the sum for you (CUB, Thrust, cuBLAS)\"): write the kernels yourself");
}

TEST_CASE("a library an #include of CCCL's brings in is named with that #include") {
    // <cuda/std/...> is not a library; what such a header pulls in of one is found through it, as the rule says.
    const Built built = build_as("scan", "scan.cu", R"(#include <cuda/std/array>
#define CUB_HEADER <cub/warp/warp_scan.cuh>
#include CUB_HEADER
__global__ void scan_warp(const float* input, float* output) {
    __shared__ cub::WarpScan<float>::TempStorage storage;
    float x = input[threadIdx.x];
    cub::WarpScan<float>(storage).InclusiveSum(x, x);
    output[threadIdx.x] = x;
}
void scan(const float* input, std::size_t n, float* output, int, float*, cudaStream_t stream) {
    if (n >= 32) scan_warp<<<1, 32, 0, stream>>>(input, output);
}
)");
    const auto findings = inspect_built(built);
    REQUIRE(findings.size() == 1);
    // A computed #include names no file: what it brought in is the file's.
    CHECK(findings[0].message == built.submission.shown.string() +
                                     ": includes <cub/warp/warp_scan.cuh> (CUB), which this exercise forbids (\"call "
                                     "libraries that scan for you (CUB, Thrust)\"): write the kernels yourself");
}

TEST_CASE("a cuBLAS call that fails the link is told that cuBLAS is refused") {
    const Built built = build_as("sum", "sum.cu", fixture_source("sum/cublas_dot/sum.cu"));
    REQUIRE_FALSE(built.build.ok);
    CHECK(built.build.step == "link");
    CHECK(fs::is_regular_file(built.build.dependencies));  // kept with a build that did not link too
    CHECK_THAT(built.build.diagnostics, contains_text("cublasSdot_v2"));
    const auto findings =
        inspect_libraries(built.build, built.submission, built.exercise, {}, find_toolchain(std::nullopt)).findings;
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == built.shown(3) +
                                     ": includes <cublas_v2.h> (cuBLAS), which this exercise forbids (\"call libraries "
                                     "that compute the sum for you (CUB, Thrust, cuBLAS)\"): write the kernels "
                                     "yourself");

    // Declared by hand, with no header: the call's own name and line.
    const Built by_hand = build_as("sum", "sum.cu", R"(#include "sum.h"
extern "C" int cublasCreate_v2(void** handle);
void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t) {
    void* handle = nullptr;
    cublasCreate_v2(&handle);
    (void)input; (void)n; (void)result;
}
)");
    REQUIRE_FALSE(by_hand.build.ok);
    const Toolchain toolchain = find_toolchain(std::nullopt);
    const auto declared =
        inspect_libraries(by_hand.build, by_hand.submission, by_hand.exercise, {}, toolchain).findings;
    REQUIRE(declared.size() == 1);
    CHECK(declared[0].message == by_hand.shown(2) +
                                     ": uses cuBLAS (cublasCreate_v2), which this exercise forbids (\"call libraries "
                                     "that compute the sum for you (CUB, Thrust, cuBLAS)\"): write the kernels "
                                     "yourself");
}

TEST_CASE("the templates and references include no library: the contract's headers are not the student's") {
    for (const std::string name : {"sum", "histogram", "scan"}) {
        for (const std::string folder : {"student_template", "reference"}) {
            const fs::path file = fs::path(CUGRADE_SOURCE_DIR) / folder / (name + ".cu");
            const Built built = build_as(name, name + ".cu", source_of(file));
            INFO(folder << "/" << name << ".cu");
            for (const auto& finding : inspect_built(built)) {
                CHECK(finding.rule != "forbidden-library");
                INFO(finding.message);
            }
        }
    }
}

TEST_CASE("a library the exercise allows passes, and a rubric can refuse it again") {
    Built built = build_as("sum", "sum.cu", fixture_source("sum/cub_block_reduce_device/sum.cu"));
    REQUIRE(built.build.ok);
    const Toolchain toolchain = find_toolchain(std::nullopt);
    built.exercise.rules.allowed_libraries = {"cub"};
    CHECK(inspect_submission(built.build, built.submission, built.exercise, {}, toolchain).findings.empty());
    ApiRules rubric;
    rubric.forbidden_libraries = {"cub"};
    const auto findings = inspect_submission(built.build, built.submission, built.exercise, rubric, toolchain).findings;
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == built.shown(3) +
                                     ": includes <cub/block/block_reduce.cuh> (CUB), which this exercise's rubric "
                                     "forbids: write the kernels yourself");
}
