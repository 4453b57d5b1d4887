// The static checks on a built submission, with the real nvcc and binutils: what it defines, what it calls, and
// whether any of its code runs before main. Messages are asserted verbatim: they are what a student reads.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "cugrade/build.hpp"
#include "cugrade/gpu.hpp"
#include "cugrade/inspect.hpp"

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
std::vector<Finding> inspect(const std::string& source, const ForbiddenApis& forbidden = {}) {
    const fs::path folder = fs::temp_directory_path() / "cugrade-test-inspect";
    fs::create_directories(folder);
    const fs::path file = folder / "sum.cu";
    std::ofstream(file) << source;
    const Exercise exercise = load_exercise(Course{CUGRADE_SOURCE_DIR}, "sum");
    const Toolchain toolchain = find_toolchain(std::nullopt);
    BuildOptions options;
    options.arch = fallback_arch;
    options.cache_dir = CUGRADE_TEST_CACHE;
    const BuildResult build = build_submission(exercise, file, toolchain, options);
    REQUIRE(build.ok);
    return inspect_submission(build, file, exercise.entry_points, forbidden, toolchain).findings;
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
          shown(9) + ": calls fork(), which submissions may not use: a submission starts no processes");
}

TEST_CASE("a rubric's own list of forbidden functions replaces the default") {
    const std::string source = std::string(correct_kernel) +
                               "void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t s) {\n"
                               "    add_all<<<1, 1, 0, s>>>(input, n, result);\n    cudaDeviceSynchronize();\n}\n";
    CHECK(inspect(source).empty());
    ForbiddenApis forbidden;
    forbidden.functions = std::vector<std::string>{"cudaDeviceSynchronize"};
    const auto findings = inspect(source, forbidden);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message ==
          shown(9) + ": calls cudaDeviceSynchronize(), which submissions may not use: this exercise forbids it");
}

TEST_CASE("using CUB is rejected, naming the call") {
    const auto findings = inspect(R"(#include <cub/device/device_reduce.cuh>
void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    std::size_t bytes = SUM_SCRATCH_FLOATS * sizeof(float);
    cub::DeviceReduce::Sum(scratch, bytes, input, result, static_cast<int>(n), stream);
}
)");
    REQUIRE_FALSE(findings.empty());
    CHECK(findings[0].rule == "forbidden-library");
    CHECK_THAT(findings[0].message, contains_text(shown(1) + ": uses CUB (cub::"));
    CHECK_THAT(findings[0].message, contains_text("), which this exercise forbids: write the kernels yourself"));
}

TEST_CASE("code that runs before main is rejected") {
    const auto findings = inspect(std::string(correct_kernel) + entry +
                                  "__attribute__((constructor)) static void early() { std::getenv(\"PATH\"); }\n"
                                  "struct Noisy { Noisy() { std::getenv(\"HOME\"); } };\nstatic Noisy noisy;\n");
    REQUIRE(findings.size() == 2);
    CHECK(findings[0].message == shown(11) +
                                     ": runs code before main (early()): a submission's code may run only when the "
                                     "grader calls sum()");
    CHECK(findings[1].message ==
          (fs::temp_directory_path() / "cugrade-test-inspect" / "sum.cu").string() +
              ": runs code before main (the constructor of a global object): a submission's code may run only when "
              "the grader calls sum()");
}
