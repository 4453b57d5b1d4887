// The contract's rule on host copies, checked on a built submission with the real nvcc and binutils before any of
// its code runs (grader/src/inspect/host_copies.cpp). Messages are asserted verbatim: they are what a student reads.
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "build/build.hpp"
#include "course/exercise.hpp"
#include "base/gpu.hpp"
#include "inspect/inspect.hpp"
#include "course/submission.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

const char* const kernel = R"(#include <vector>
__global__ void add_all(const float* in, std::size_t n, float* out) {
    float total = 0.0f;
    for (std::size_t i = 0; i < n; ++i) total += in[i];
    out[0] = total;
}
)";

// Builds `source` as the sum exercise's sum.cu and inspects it under the exercise's own rules (exercise.yaml: host
// copies refused, "copy to the host"), or under `contract` where given.
std::vector<Finding> inspect(const std::string& source, const std::optional<ContractRules>& contract = std::nullopt) {
    const fs::path folder = fs::temp_directory_path() / "cugrade-test-host-copies";
    fs::create_directories(folder);
    std::ofstream(folder / "sum.cu") << source;
    Exercise exercise = load_exercise(Course{CUGRADE_SOURCE_DIR}, "sum");
    REQUIRE(exercise.rules.host_copies_refused);
    REQUIRE(exercise.rules.host_copies_words == "copy to the host");
    const Toolchain toolchain = find_toolchain(std::nullopt);
    BuildOptions options;
    options.arch = fallback_arch;
    options.cache_dir = CUGRADE_TEST_CACHE;
    options.sandbox.enabled = true;
    const SubmissionFile submission = read_submission(folder, "sum.cu");
    const BuildResult build = build_submission(exercise, submission, toolchain, options);
    INFO(build.diagnostics);
    REQUIRE(build.ok);
    exercise.rules = contract.value_or(exercise.rules);
    return inspect_submission(build, submission, exercise, ApiRules{}, toolchain).findings;
}

std::string shown(int line) {
    return (fs::temp_directory_path() / "cugrade-test-host-copies" / "sum.cu").string() + ":" + std::to_string(line);
}

const char* const signature =
    "void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t stream) {\n";

const char* const advice = "compute on the GPU and leave the results in the buffers you are given";

// Line 9: the copy to the host.
const std::string sums_on_host = std::string(kernel) + signature + R"(    std::vector<float> host(n);
    if (n > 0) cudaMemcpy(host.data(), input, n * sizeof(float), cudaMemcpyDeviceToHost);
    float total = 0.0f;
    for (float x : host) total += x;
    cudaMemcpyAsync(result, &total, sizeof total, cudaMemcpyHostToDevice, stream);
}
)";

}  // namespace

TEST_CASE("a copy to the host in the source is refused before it runs, with the line and the contract's words") {
    const auto findings = inspect(sums_on_host);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].rule == "host-copy");
    CHECK(findings[0].symbol == "cudaMemcpyDeviceToHost");
    CHECK(findings[0].message == shown(9) +
                                     ": copies to the host (cudaMemcpyDeviceToHost), which this exercise "
                                     "forbids (\"copy to the host\"): " +
                                     advice);
}

TEST_CASE("an exercise whose contract allows host copies refuses none") {
    CHECK(inspect(sums_on_host, ContractRules{}).empty());
}

TEST_CASE("reading a symbol back to the host is refused, naming the call") {
    const auto findings = inspect(std::string(kernel) + R"(__device__ float last_total;
void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t stream) {
    add_all<<<1, 1, 0, stream>>>(input, n, result);
    float seen = 0.0f;
    cudaMemcpyFromSymbol(&seen, last_total, sizeof seen);
}
)");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].symbol == "cudaMemcpyFromSymbol()");
    CHECK(findings[0].message == shown(11) +
                                     ": copies to the host (cudaMemcpyFromSymbol()), which this exercise "
                                     "forbids (\"copy to the host\"): " +
                                     advice);
}

// A kernel's constants come from the host, and a copy between the buffers it is given may name cudaMemcpyDefault:
// neither reads device memory on the host.
TEST_CASE("uploading a kernel's constants and copying between device buffers are not host copies") {
    CHECK(inspect(std::string(kernel) + R"(__constant__ float weights[4];
void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    const float host_weights[4] = {1, 1, 1, 1};
    cudaMemcpyToSymbolAsync(weights, host_weights, sizeof host_weights, 0, cudaMemcpyHostToDevice, stream);
    const float zero = 0.0f;
    cudaMemcpyAsync(scratch, &zero, sizeof zero, cudaMemcpyHostToDevice, stream);
    add_all<<<1, 1, 0, stream>>>(input, n, scratch);
    cudaMemcpyAsync(result, scratch, sizeof(float), cudaMemcpyDefault, stream);
}
)")
              .empty());
}

TEST_CASE("the direction's name in a comment or in code the preprocessor dropped is not a copy") {
    CHECK(inspect(std::string(kernel) + R"(// No cudaMemcpyDeviceToHost here: the total stays on the GPU.
#if 0
static void debug(const float* input, float* host, std::size_t n) {
    cudaMemcpy(host, input, n * sizeof(float), cudaMemcpyDeviceToHost);
}
#endif
void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t stream) {
    add_all<<<1, 1, 0, stream>>>(input, n, result);
}
)")
              .empty());
}

// What the source does not show is the runner's to refuse when the call is made (tests/cpu/, the fixtures).
TEST_CASE("a direction given by number passes the static check: the runner refuses the copy at run time") {
    CHECK(inspect(std::string(kernel) + signature + R"(    std::vector<float> host(n);
    cudaMemcpy(host.data(), input, n * sizeof(float), static_cast<cudaMemcpyKind>(2));
    add_all<<<1, 1, 0, stream>>>(input, n, result);
}
)")
              .empty());
}
