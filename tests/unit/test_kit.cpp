// The parts of a student kit that need no nvcc: the reference's names made opaque, the visible rubric, the kit's
// manifest and its toolkit check, and the tarball.
#include <filesystem>
#include <string>

#include "batch/archive.hpp"
#include "catch.hpp"
#include "fresh_folder.hpp"
#include "base/error.hpp"
#include "course/exercise.hpp"
#include "course/kit.hpp"
#include "course/rubric.hpp"
#include "build/toolchain.hpp"
#include "base/file_io.hpp"
#include "authoring/opaque_names.hpp"
#include "course/visible_rubric.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

fs::path fresh(const std::string& name) { return fresh_folder("kit", name); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("the reference's own names become opaque; the toolkit's and the contract's stay") {
    const std::string source =
        "// Sums with a tree of warp shuffles.\n"
        "#include \"sum.h\"\n"
        "#pragma unroll\n"
        "namespace { constexpr int kThreads = 512; /* threads per block */\n"
        "__device__ float warp_sum(float value) { return value + 1.5e-3f + 0x1p-24; }\n"
        "__global__ void sum_kernel(const float* in) { float total = warp_sum(in[threadIdx.x]); }\n"
        "}\n"
        "extern \"C\" void sum(const float* in) { const char* why = \"warp_sum stays in a string\"; "
        "sum_kernel<<<1, kThreads>>>(in); }\n";
    const std::set<std::string> known = {"sum", "float", "threadIdx", "x", "in"};
    const OpaqueSource opaque = with_opaque_names(source, known);
    CHECK_FALSE(contains(opaque.text, "Sums with"));
    CHECK_FALSE(contains(opaque.text, "threads per block"));
    CHECK_FALSE(contains(opaque.text, "kThreads"));
    CHECK_FALSE(contains(opaque.text, " warp_sum("));
    CHECK_FALSE(contains(opaque.text, "sum_kernel"));
    CHECK(contains(opaque.text, "#include \"sum.h\""));
    CHECK(contains(opaque.text, "#pragma unroll"));
    CHECK(contains(opaque.text, "__global__ void cugrade_ref_"));
    CHECK(contains(opaque.text, "extern \"C\" void sum(const float* in)"));
    CHECK(contains(opaque.text, "in[threadIdx.x]"));
    CHECK(contains(opaque.text, "1.5e-3f + 0x1p-24"));
    CHECK(contains(opaque.text, "\"warp_sum stays in a string\""));
    CHECK(opaque.renamed == std::vector<std::string>{"kThreads", "warp_sum", "value", "sum_kernel", "total", "why"});
    CHECK(identifiers_in(source).count("Sums") == 0);  // comments hold no names
    CHECK(identifiers_in(source).count("kThreads") == 1);
}

TEST_CASE("the visible rubric drops hidden groups, a hidden speed test and the inputs only they used") {
    const fs::path dir = fresh("rubric");
    write_file(dir / "sum.yaml",
               "schema: 1\nexercise: sum\n"
               "inputs:\n  ints: {kind: integers, low: 1, high: 3}\n  secret: {kind: uniform, low: -7, high: 7}\n"
               "groups:\n"
               "  - {name: edges, visibility: visible, points: 10, sizes: [1, 2], inputs: [ints], seed: 1}\n"
               "  - {name: large, visibility: hidden, points: 20, sizes: [4194301], inputs: [secret], seed: 77}\n"
               "speed:\n  size: 1024\n  input: ints\n  seed: 4\n  tiers: [{max_ratio: 1.5, points: 5}]\n");
    const std::string visible = visible_rubric_text(dir / "sum.yaml");
    CHECK_FALSE(contains(visible, "large"));
    CHECK_FALSE(contains(visible, "4194301"));
    CHECK_FALSE(contains(visible, "77"));
    CHECK_FALSE(contains(visible, "secret"));
    CHECK(contains(visible, "edges"));
    CHECK(contains(visible, "hidden cases, which are not in this kit"));
    write_file(dir / "visible.yaml", visible);
    const Rubric rubric = load_rubric(dir / "visible.yaml");
    CHECK(rubric.groups.size() == 1);
    CHECK(rubric.speed.has_value());

    write_file(dir / "hidden-speed.yaml",
               "schema: 1\nexercise: sum\ninputs:\n  ints: {kind: integers, low: 1, high: 3}\n"
               "groups:\n  - {name: edges, visibility: visible, points: 10, sizes: [1], inputs: [ints], seed: 1}\n"
               "speed:\n  size: 999331\n  input: ints\n  seed: 4\n  visibility: hidden\n"
               "  tiers: [{max_ratio: 1.5, points: 5}]\n");
    CHECK_FALSE(contains(visible_rubric_text(dir / "hidden-speed.yaml"), "999331"));
}

TEST_CASE("a kit whose graded files changed is refused, naming them") {
    const fs::path dir = fresh("manifest");
    fs::create_directories(dir / "rubrics");
    write_file(dir / "rubrics" / "sum.yaml", "schema: 1\n");
    write_file(dir / "rubrics" / "minmax.yaml", "schema: 1\n");
    Kit kit;
    kit.cugrade_version = "0.1.0";
    kit.nvcc_version = "Build cuda_13.0.r13.0/compiler.36424714_0";
    kit.release = "13.0";
    kit.arches = {"sm_90"};
    kit.graded_arch = "sm_90";
    kit.exercises = {"sum"};
    kit.files = {{"rubrics/sum.yaml", file_digest(dir / "rubrics" / "sum.yaml")},
                 {"rubrics/minmax.yaml", file_digest(dir / "rubrics" / "minmax.yaml")}};
    write_kit(dir, kit);
    const auto read = read_kit(dir);
    REQUIRE(read.has_value());
    CHECK(read->files == kit.files);
    CHECK(read->graded_arch == "sm_90");
    CHECK_NOTHROW(verify_kit(dir, *read));

    write_file(dir / "rubrics" / "sum.yaml", "schema: 1\n# every case is worth more now\n");
    fs::remove(dir / "rubrics" / "minmax.yaml");
    try {
        verify_kit(dir, *read);
        FAIL("a changed kit was accepted");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) ==
              "the kit in '" + dir.string() +
                  "' was changed after it was made: rubrics/minmax.yaml (missing), rubrics/sum.yaml; these files "
                  "decide grades, so unpack the kit again (your own work lives outside them)");
    }
    CHECK_THROWS_AS(open_course(dir), UsageError);

    write_file(dir / kit_manifest_name, "{ not json");
    CHECK_THROWS_AS(read_kit(dir), FileError);
    CHECK_FALSE(read_kit(fresh("no-kit")).has_value());
}

TEST_CASE("an nvcc older than the kit's is told both versions") {
    Kit kit;
    kit.release = "13.0";
    kit.nvcc_version = "Build cuda_13.0.r13.0/compiler.36424714_0";
    CHECK(release_older("12.4", "13.0"));
    CHECK(release_older("13.0", "13.1"));
    CHECK_FALSE(release_older("13.0", "13.0"));
    CHECK_FALSE(release_older("13.2", "13.0"));
    CHECK_NOTHROW(check_kit_toolkit(kit, "13.0", "/usr/local/cuda/bin/nvcc"));
    CHECK_NOTHROW(check_kit_toolkit(kit, "13.1", "/usr/local/cuda/bin/nvcc"));
    try {
        check_kit_toolkit(kit, "12.4", "/usr/local/cuda-12.4/bin/nvcc");
        FAIL("an older nvcc was accepted");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) ==
              "this kit's harnesses were built with CUDA 13.0 (Build cuda_13.0.r13.0/compiler.36424714_0), but "
              "/usr/local/cuda-12.4/bin/nvcc is CUDA 12.4, which cannot link them: install CUDA 13.0 or newer, or "
              "ask for a kit built with CUDA 12.4");
    }
}

#if CUGRADE_HAVE_LIBARCHIVE
TEST_CASE("the same folder always packs into the same tarball") {
    const fs::path dir = fresh("pack") / "kit";
    fs::create_directories(dir / "rubrics");
    write_file(dir / "README.md", "read me\n");
    write_file(dir / "rubrics" / "sum.yaml", "schema: 1\n");
    pack_folder(dir, dir.parent_path() / "first.tar.gz");
    fs::last_write_time(dir / "README.md", fs::file_time_type::clock::now() - std::chrono::hours(30));
    pack_folder(dir, dir.parent_path() / "second.tar.gz");
    CHECK(read_file(dir.parent_path() / "first.tar.gz") == read_file(dir.parent_path() / "second.tar.gz"));
    const fs::path unpacked = dir.parent_path() / "unpacked";
    unpack_archive(dir.parent_path() / "first.tar.gz", unpacked);
    CHECK(read_file(unpacked / "kit" / "rubrics" / "sum.yaml") == "schema: 1\n");
}
#endif
