// Building submissions with the real nvcc: the cache, compile errors at the student's line, and the wall between
// the submission and the reference.
#include <chrono>
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "cugrade/build.hpp"
#include "cugrade/gpu.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

struct Workspace {
    fs::path root = fs::temp_directory_path() / "cugrade-test-build";
    Exercise exercise = load_exercise(Course{CUGRADE_SOURCE_DIR}, "sum");
    Toolchain toolchain = find_toolchain(std::nullopt);

    Workspace() { fs::create_directories(root / "submission"); }

    fs::path submit(const std::string& source) {
        std::ofstream(root / "submission" / "sum.cu") << source;
        return root / "submission" / "sum.cu";
    }

    BuildResult build(const fs::path& submission) {
        BuildOptions options;
        options.arch = fallback_arch;
        options.cache_dir = CUGRADE_TEST_CACHE;
        return build_submission(exercise, submission, toolchain, options);
    }
};

std::string template_source() {
    std::ifstream in(fs::path(CUGRADE_SOURCE_DIR) / "student_template" / "sum.cu");
    return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("a submission is built once, then served from the cache until it changes") {
    Workspace w;
    // A comment no earlier run wrote, so the first build cannot come from an older test's cache.
    const std::string unique = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    const auto submission = w.submit(template_source() + "// build cache test " + unique + "\n");
    const BuildResult first = w.build(submission);
    REQUIRE(first.ok);
    CHECK_FALSE(first.cached);
    const BuildResult second = w.build(submission);
    CHECK(second.ok);
    CHECK(second.cached);
    CHECK(second.program == first.program);
    const BuildResult changed = w.build(w.submit(template_source() + "// build cache test, changed " + unique + "\n"));
    CHECK(changed.ok);
    CHECK_FALSE(changed.cached);
}

TEST_CASE("a compile error is reported at the student's file and line") {
    Workspace w;
    const auto submission = w.submit("// line 1\n#include \"sum.h\"\nvoid sum(const float*, std::size_t, float* r, float*, cudaStream_t) { r[0] = undefined_name; }\n");
    const BuildResult result = w.build(submission);
    CHECK_FALSE(result.ok);
    CHECK(result.step == "compile");
    CHECK_THAT(result.diagnostics,
               contains_text(submission.string() + ":3: error: identifier \"undefined_name\" is undefined"));
    // A failed build is cached as well: the same mistake is not compiled twice.
    CHECK(w.build(submission).cached);
}

TEST_CASE("the submission cannot call the reference") {
    Workspace w;
    const BuildResult result = w.build(w.submit(
        "extern \"C\" void cugrade_reference_sum(const float*, std::size_t, float*, float*, cudaStream_t);\n"
        "void sum(const float* in, std::size_t n, float* r, float* s, cudaStream_t st) {\n"
        "    cugrade_reference_sum(in, n, r, s, st);\n}\n"));
    CHECK_FALSE(result.ok);
    CHECK(result.step == "link");
    CHECK_THAT(result.diagnostics, contains_text("undefined reference to `cugrade_reference_sum'"));
}

TEST_CASE("a submission that does not define its entry point, or defines main, does not link") {
    Workspace w;
    const BuildResult missing = w.build(w.submit("__global__ void nothing() {}\n"));
    CHECK_FALSE(missing.ok);
    CHECK_THAT(missing.diagnostics, contains_text("undefined reference to `sum'"));
    const BuildResult with_main = w.build(w.submit(
        "void sum(const float*, std::size_t, float*, float*, cudaStream_t) {}\nint main() { return 0; }\n"));
    CHECK_FALSE(with_main.ok);
    CHECK_THAT(with_main.diagnostics, contains_text("multiple definition of `main'"));
}

TEST_CASE("an entry point with the wrong signature fails to build, with a hint") {
    Workspace w;
    const BuildResult result = w.build(w.submit("void sum(float* input, int n) {}\n"));
    CHECK_FALSE(result.ok);
    CHECK(result.step == "link");
    CHECK_THAT(result.diagnostics, contains_text("hint: sum.cu must define sum() exactly as sum.h declares it"));
}
