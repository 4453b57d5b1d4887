// The cugrade command itself: exit codes and messages, verbatim.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "cugrade/gpu.hpp"
#include "cugrade/process.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

ProcessResult cugrade_cli(std::vector<std::string> args) {
    ProcessOptions options;
    options.argv = {CUGRADE_BINARY};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.environment = {{"CUGRADE_CACHE_DIR", CUGRADE_TEST_CACHE}};
    return run_process(options, std::chrono::seconds(600));
}

fs::path scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / "cugrade-test-cli" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

}  // namespace

TEST_CASE("--version prints the version") {
    const ProcessResult result = cugrade_cli({"--version"});
    CHECK(result.status.code == 0);
    CHECK(result.output == "cugrade 0.1.0\n");
}

TEST_CASE("bad usage exits with code 2 and says what to do") {
    ProcessResult result = cugrade_cli({"check", "/no/such/folder"});
    CHECK(result.status.code == 2);
    CHECK(result.output == "cugrade: error: '/no/such/folder' is not a folder; give the folder that holds your submission\n");

    const fs::path empty = scratch("empty");
    result = cugrade_cli({"check", empty.string()});
    CHECK(result.status.code == 2);
    CHECK(result.output == "cugrade: error: no submission found in '" + empty.string() + "': expected one of minmax.cu, sum.cu, transpose.cu\n");

    result = cugrade_cli({"check", "--exercise", "summ", CUGRADE_SOURCE_DIR "/student_template"});
    CHECK(result.status.code == 2);
    CHECK(result.output == "cugrade: error: unknown exercise 'summ' (did you mean 'sum'?)\n");

    result = cugrade_cli({"check", "--frobnicate"});
    CHECK(result.status.code == 2);
    CHECK_THAT(result.output, Catch::Matchers::StartsWith("cugrade: error: "));
}

TEST_CASE("--rubric needs one exercise") {
    const ProcessResult result =
        cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "--rubric", CUGRADE_SOURCE_DIR "/rubrics/sum.yaml"});
    CHECK(result.status.code == 2);
    CHECK(result.output == "cugrade: error: --rubric needs exactly one exercise; name it with --exercise\n");
}

TEST_CASE("a bad rubric exits with code 2 and points at the mistake") {
    const fs::path dir = scratch("rubric");
    std::ofstream(dir / "bad.yaml") << "schema: 1\nexercise: sum\ninputs:\n  p: {kind: uniform, low: 0, high: 1}\n"
                                       "groups:\n  - {name: g, points: 1, sizes: [1], inputs: [p], seed: 1, tries: 3}\n";
    const ProcessResult result =
        cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "--exercise", "sum", "--rubric", (dir / "bad.yaml").string()});
    CHECK(result.status.code == 2);
    CHECK(result.output == "cugrade: error: " + (dir / "bad.yaml").string() +
                               ":6:60: unknown key 'tries' in a group\n");
}

TEST_CASE("the template builds; without a GPU the verdict is 'skipped', with one it fails") {
    const fs::path dir = scratch("template");
    const fs::path json = dir / "results.json";
    const ProcessResult result =
        cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "--json", json.string()});
    std::ifstream in(json);
    const auto results = nlohmann::json::parse(in);
    CHECK(results["schema"] == "cugrade-results");
    CHECK(results["exercises"][0]["build"]["ok"] == true);
    if (probe_gpu().available) {
        CHECK(result.status.code == 1);
        CHECK(results["outcome"] == "failed");
    } else {
        CHECK(result.status.code == 77);
        CHECK(results["outcome"] == "skipped");
        CHECK_THAT(result.output, contains_text("correctness and speed need an NVIDIA GPU: "));
    }
}

TEST_CASE("bench times the reference, the baseline and the copy; without a GPU it reports skipped") {
    const fs::path dir = scratch("bench");
    const ProcessResult result =
        cugrade_cli({"bench", "--exercise", "sum", "--size", "65536", "--json", (dir / "bench.json").string()});
    if (!probe_gpu().available) {
        CHECK(result.status.code == 77);
        CHECK_THAT(result.output, Catch::Matchers::StartsWith("cugrade: bench needs an NVIDIA GPU: "));
        return;
    }
    CHECK(result.status.code == 0);
    std::ifstream in(dir / "bench.json");
    const auto bench = nlohmann::json::parse(in);
    REQUIRE(bench["rows"].size() == 3);
    for (const auto& row : bench["rows"]) {
        CHECK_FALSE(row.contains("error"));
    }
    CHECK(bench["rows"][0]["what"] == "reference");
    CHECK(bench["rows"][2]["what"] == "baseline");
    CHECK(bench["rows"][0]["gb_per_s"].get<double>() > 0.0);
}
