// Building submissions with the real nvcc: the cache, compile errors at the student's line, and the wall between
// the submission and the reference.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "diagnose/access_width.hpp"
#include "inspect/sass_listing.hpp"
#include "inspect/shared_memory_use.hpp"
#include "catch.hpp"
#include "build/build.hpp"
#include "base/gpu.hpp"
#include "course/submission.hpp"

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

    // Built as a grading builds: in the sandbox.
    BuildResult build(const fs::path& submission, BuildOptions options = {}) {
        options.arch = fallback_arch;
        if (options.cache_dir.empty()) {
            options.cache_dir = CUGRADE_TEST_CACHE;
        }
        options.sandbox.enabled = true;
        return build_submission(exercise, read_submission(submission.parent_path(), submission.filename()), toolchain,
                                options);
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
    CHECK(second.runner == first.runner);
    const BuildResult changed = w.build(w.submit(template_source() + "// build cache test, changed " + unique + "\n"));
    CHECK(changed.ok);
    CHECK_FALSE(changed.cached);
}

TEST_CASE("two files that differ only in their comments are the same code; a line moved or a string changed is not") {
    Workspace w;
    const auto replaced = [](std::string text, const std::string& from, const std::string& to) {
        const auto at = text.find(from);
        REQUIRE(at != std::string::npos);
        return text.replace(at, from.size(), to);
    };
    // A comment no earlier run wrote: the files below are built afresh, not found in an older run's cache.
    const std::string unique = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    const std::string source =
        template_source() + "static const char* const note = \"// in a string\";\n// run " + unique + "\n";
    const BuildResult original = w.build(w.submit(source));
    REQUIRE(original.ok);
    REQUIRE_FALSE(original.same_code.empty());
    CHECK(original.same_code.find("TODO") == std::string::npos);
    const BuildResult recommented = w.build(w.submit(
        replaced(source,
                 "// TODO: choose the number of blocks. It may not exceed SUM_SCRATCH_FLOATS (one partial per block).",
                 "/* how many blocks? */") +
        "// s0042, late\n"));
    REQUIRE(recommented.ok);
    CHECK_FALSE(recommented.cached);
    CHECK(recommented.same_code == original.same_code);
    CHECK(w.build(w.submit(source)).same_code == original.same_code);  // from the cache
    const BuildResult line_added =
        w.build(w.submit(replaced(source, "#include \"sum.h\"\n", "#include \"sum.h\"\n\n")));
    REQUIRE(line_added.ok);
    CHECK(line_added.same_code != original.same_code);
    const BuildResult string_changed = w.build(w.submit(replaced(source, "// in a string", "// in another string")));
    REQUIRE(string_changed.ok);
    CHECK(string_changed.same_code != original.same_code);
}

TEST_CASE("a build also makes the runner, without libcudart, and takes out the device code for the checker") {
    Workspace w;
    const BuildResult result = w.build(w.submit(template_source()));
    REQUIRE(result.ok);
    REQUIRE(fs::is_regular_file(result.runner));
    std::ifstream runner(result.runner, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(runner), {}};
    // libcudart's own entry point for the driver; the capture runtime has none.
    CHECK(bytes.find("cudaGetExportTable") == std::string::npos);
    CHECK(bytes.find("libcuda.so") == std::string::npos);
    std::ifstream device_code(result.device_code, std::ios::binary);
    unsigned char magic[4] = {};
    device_code.read(reinterpret_cast<char*>(magic), 4);
    CHECK((magic[0] == 0x50 && magic[1] == 0xed && magic[2] == 0x55 && magic[3] == 0xba));  // a fatbinary
}

TEST_CASE("a compile error is reported at the student's file and line") {
    Workspace w;
    const auto submission = w.submit(
        "// line 1\n#include \"sum.h\"\nvoid sum(const float*, std::size_t, float* r, float*, cudaStream_t) { r[0] = undefined_name; }\n");
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
    const BuildResult result = w.build(
        w.submit("extern \"C\" void cugrade_reference_sum(const float*, std::size_t, float*, float*, cudaStream_t);\n"
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
    const BuildResult with_main = w.build(
        w.submit("void sum(const float*, std::size_t, float*, float*, cudaStream_t) {}\nint main() { return 0; }\n"));
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

TEST_CASE("cached compiler messages show the path of the grading that asks, not of the first") {
    Workspace w;
    const std::string unique = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    const std::string source = "// " + unique +
                               "\nvoid sum(const float*, std::size_t, float* r, float*, cudaStream_t) "
                               "{ r[0] = undefined_name; }\n";
    const auto alice = w.root / "alice" / "sum.cu";
    const auto bob = w.root / "bob" / "sum.cu";
    for (const auto& file : {alice, bob}) {
        fs::create_directories(file.parent_path());
        std::ofstream(file) << source;
    }
    const BuildResult first = w.build(alice);
    const BuildResult second = w.build(bob);
    CHECK_FALSE(first.cached);
    CHECK(second.cached);
    CHECK_THAT(first.diagnostics, contains_text(alice.string() + ":2: error"));
    CHECK_THAT(second.diagnostics, contains_text(bob.string() + ":2: error"));
    CHECK(second.diagnostics.find("alice") == std::string::npos);
}

TEST_CASE("a warning nvcc prints twice (device and host) is shown once") {
    Workspace w;
    const BuildResult result =
        w.build(w.submit("void sum(const float*, std::size_t, float* r, float*, cudaStream_t) {\n"
                         "    unsigned u = 0;\n    if (u < 0) { r[0] = 1; }\n}\n"));
    REQUIRE(result.ok);
    const std::string warning = "pointless comparison of unsigned integer with zero";
    const auto first = result.diagnostics.find(warning);
    REQUIRE(first != std::string::npos);
    CHECK(result.diagnostics.find(warning, first + 1) == std::string::npos);
}

TEST_CASE("the build sees the submission, its contract, the toolkit and the system, nothing else of the host") {
    Workspace w;
    const fs::path secret = fs::path(CUGRADE_SOURCE_DIR) / "reference" / "sum.cu";
    for (const std::string& way : std::vector<std::string>{
             "#include \"" + secret.string() + "\"\n", std::string("#include \"../../../reference/sum.cu\"\n"),
             "asm(\".incbin \\\"" + secret.string() + "\\\"\");\n", std::string("#include \"/etc/shadow\"\n")}) {
        INFO(way);
        const BuildResult result = w.build(w.submit(way + template_source()));
        CHECK_FALSE(result.ok);
        CHECK(result.step == "compile");
        // The reference's own words never reach the messages.
        CHECK(result.diagnostics.find("cugrade_reference") == std::string::npos);
        CHECK(result.diagnostics.find("Reference") == std::string::npos);
    }
    // A system header is there, as it must be.
    CHECK(w.build(w.submit("#include <vector>\n#include <cstdio>\n" + template_source())).ok);
}

TEST_CASE("no cache file holds the reference's source, and a link error never names the cache") {
    Workspace w;
    const std::string reference = [] {
        std::ifstream in(fs::path(CUGRADE_SOURCE_DIR) / "reference" / "sum.cu");
        return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    // A line of the reference that no other file of the course has.
    const std::string line = reference.substr(reference.find("constexpr int kVectorsPerThread"), 30);
    const BuildResult built = w.build(w.submit(template_source()));
    REQUIRE(built.ok);
    // The harness's entry, and this submission's. (Another submission's entry holds that submission whole, and the
    // tests grade the reference as a submission too.)
    for (const auto& folder : {built.program_symbols.parent_path(), built.runner.parent_path()}) {
        for (const auto& file : fs::directory_iterator(folder)) {
            if (file.is_regular_file()) {
                std::ifstream in(file.path(), std::ios::binary);
                const std::string text((std::istreambuf_iterator<char>(in)), {});
                INFO(file.path());
                CHECK(text.find(line) == std::string::npos);
            }
        }
    }
    const BuildResult unlinked = w.build(w.submit("__global__ void nothing() {}\n"));
    CHECK_FALSE(unlinked.ok);
    CHECK(unlinked.diagnostics.find(fs::path(CUGRADE_TEST_CACHE).filename().string()) == std::string::npos);
}

TEST_CASE("a damaged cache entry is rebuilt, never served") {
    Workspace w;
    const std::string unique = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    const auto submission = w.submit(template_source() + "// damaged entry test " + unique + "\n");
    const BuildResult first = w.build(submission);
    REQUIRE(first.ok);
    fs::resize_file(first.runner, fs::file_size(first.runner) / 2);
    const BuildResult again = w.build(submission);
    CHECK(again.ok);
    CHECK_FALSE(again.cached);
    fs::remove(again.runner);
    const BuildResult third = w.build(submission);
    CHECK(third.ok);
    CHECK_FALSE(third.cached);
    CHECK(fs::exists(third.runner));
}

TEST_CASE("a compile stopped at its time limit fails this build but is not cached") {
    Workspace w;
    const std::string unique = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    // Twenty thousand instantiations: many seconds of nvcc.
    const std::string slow =
        "// " + unique +
        "\n#include <utility>\n"
        "template <int N> int f() { return N * 3 + 1; }\n"
        "template <int... I> int all(std::integer_sequence<int, I...>) { return (f<I>() + ...); }\n"
        "int many() { return all(std::make_integer_sequence<int, 20000>{}); }\n" +
        template_source();
    const auto submission = w.submit(slow);
    BuildOptions options;
    options.compile_seconds = 1.0;
    const BuildResult stopped = w.build(submission, options);
    CHECK_FALSE(stopped.ok);
    CHECK(stopped.step == "compile");
    CHECK_THAT(stopped.diagnostics, contains_text("nvcc timed out (the compile may take at most 1 s)"));
    const BuildResult again = w.build(submission, options);
    CHECK_FALSE(again.cached);
}

TEST_CASE("a build without a cache leaves nothing behind") {
    Workspace w;
    w.submit(template_source());
    const auto leftovers = [] {
        int count = 0;
        for (const auto& entry : fs::directory_iterator(fs::temp_directory_path())) {
            const std::string name = entry.path().filename().string();
            count += name.rfind("cugrade-build-" + std::to_string(::getpid()) + "-", 0) == 0 ? 1 : 0;
        }
        return count;
    };
    {
        BuildOptions options;
        options.cache_dir = "";
        options.arch = fallback_arch;
        options.sandbox.enabled = true;
        const BuildResult result =
            build_submission(w.exercise, read_submission(w.root / "submission", "sum.cu"), w.toolchain, options);
        CHECK(leftovers() > 0);
    }
    CHECK(leftovers() == 0);
}

TEST_CASE("the width of a built submission's global loads is read from its device code, where cuobjdump is") {
    Workspace w;
    std::ifstream in(fs::path(CUGRADE_SOURCE_DIR) / "tests" / "fixtures" / "sum" / "seed_tree" / "sum.cu");
    const BuildResult built = w.build(w.submit({std::istreambuf_iterator<char>(in), {}}));
    REQUIRE(built.ok);
    const auto listing = sass_listing_of(w.toolchain.cuobjdump, built.device_code);
    const KernelAccessWidths widths = listing ? read_access_widths(*listing) : KernelAccessWidths{};
    if (w.toolchain.cuobjdump.empty()) {
        WARN("no cuobjdump beside nvcc: the widths are not known");
        CHECK(widths.empty());
        return;
    }
    // Both of the seed's kernels read and write floats, one at a time.
    REQUIRE(widths.count("partial_sums") == 1);
    REQUIRE(widths.count("final_sum") == 1);
    for (const std::string kernel : {"partial_sums", "final_sum"}) {
        INFO(kernel);
        CHECK(widths.at(kernel).widest_load_bytes == 4);
        CHECK(widths.at(kernel).widest_store_bytes == 4);
    }
}

TEST_CASE("whether a built submission's kernels can touch shared memory is read from its device code") {
    Workspace w;
    std::ifstream in(fs::path(CUGRADE_SOURCE_DIR) / "tests" / "fixtures" / "sum" / "seed_tree" / "sum.cu");
    const BuildResult tree = w.build(w.submit({std::istreambuf_iterator<char>(in), {}}));
    // One thread reads every element: global loads and a store, on every architecture (an atomic may be a generic
    // instruction on some, which counts as touching).
    const BuildResult serial =
        w.build(w.submit("#include \"sum.h\"\n"
                         "__global__ void serial_sum(const float* input, std::size_t n, float* result) {\n"
                         "    float total = 0.0f;\n"
                         "    for (std::size_t i = 0; i < n; ++i) { total += input[i]; }\n"
                         "    *result = total;\n"
                         "}\n"
                         "void sum(const float* input, std::size_t n, float* result, float*, cudaStream_t stream) {\n"
                         "    serial_sum<<<1, 1, 0, stream>>>(input, n, result);\n"
                         "}\n"));
    REQUIRE(tree.ok);
    REQUIRE(serial.ok);
    // Not knowing, it may.
    CHECK(may_touch_shared_memory(sass_listing_of("", serial.device_code)));
    if (w.toolchain.cuobjdump.empty()) {
        WARN("no cuobjdump beside nvcc: whether the kernels touch shared memory is not known");
        return;
    }
    // A tree in shared memory per block.
    CHECK(may_touch_shared_memory(sass_listing_of(w.toolchain.cuobjdump, tree.device_code)));
    CHECK_FALSE(may_touch_shared_memory(sass_listing_of(w.toolchain.cuobjdump, serial.device_code)));
}
