// The cugrade command itself: exit codes and messages, verbatim.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "base/gpu.hpp"
#include "grading/grading.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/process.hpp"

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

TEST_CASE("cugrade --version prints the version") {
    const ProcessResult result = cugrade_cli({"--version"});
    CHECK(result.status.code == 0);
    CHECK(result.output == "cugrade 0.1.0\n");
}

TEST_CASE("bad usage exits with code 2 and says what to do") {
    ProcessResult result = cugrade_cli({"check", "/no/such/folder"});
    CHECK(result.status.code == 2);
    CHECK(result.output ==
          "cugrade: error: '/no/such/folder' is not a folder; give the folder that holds your submission\n");

    const fs::path empty = scratch("empty");
    result = cugrade_cli({"check", empty.string()});
    CHECK(result.status.code == 2);
    CHECK(result.output ==
          "cugrade: error: no submission found in '" + empty.string() +
              "': expected one of dot.cu, histogram.cu, matadd.cu, matmul.cu, minmax.cu, scan.cu, sum.cu, "
              "sum_accurate.cu, transpose.cu\n");

    result = cugrade_cli({"check", "--exercise", "summ", CUGRADE_SOURCE_DIR "/student_template"});
    CHECK(result.status.code == 2);
    CHECK(result.output == "cugrade: error: unknown exercise 'summ' (did you mean 'sum'?)\n");

    // The hint names the subcommand that was used, whichever it is.
    for (const auto& [arguments, error] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"check", "--frobnicate"}, "The following argument was not expected: --frobnicate"},
             {{"grade", "-rf"}, "The following argument was not expected: -rf"},
             {{"bench", "--frobnicate"}, "The following argument was not expected: --frobnicate"},
             {{"handout", "kit", "-rf"}, "The following argument was not expected: -rf"},
             {{"new", "-rf"}, "name is required"},
             {{"--frobnicate"}, "A subcommand is required"}}) {
        result = cugrade_cli(arguments);
        CHECK(result.status.code == 2);
        const std::string help = arguments.size() == 1 ? "cugrade --help" : "cugrade " + arguments[0] + " --help";
        CHECK(result.output == "cugrade: error: " + error + "\n(run '" + help + "' for the options)\n");
    }
}

TEST_CASE("cugrade check --rubric needs one exercise") {
    const ProcessResult result = cugrade_cli(
        {"check", CUGRADE_SOURCE_DIR "/student_template", "--rubric", CUGRADE_SOURCE_DIR "/rubrics/sum.yaml"});
    CHECK(result.status.code == 2);
    CHECK(result.output == "cugrade: error: --rubric needs exactly one exercise; name it with --exercise\n");
}

TEST_CASE("a bad rubric exits with code 2 and points at the mistake") {
    const fs::path dir = scratch("rubric");
    std::ofstream(dir / "bad.yaml")
        << "schema: 1\nexercise: sum\ninputs:\n  p: {kind: uniform, low: 0, high: 1}\n"
           "groups:\n  - {name: g, points: 1, sizes: [1], inputs: [p], seed: 1, tries: 3}\n";
    const ProcessResult result = cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "--exercise", "sum",
                                              "--rubric", (dir / "bad.yaml").string()});
    CHECK(result.status.code == 2);
    CHECK(result.output ==
          "cugrade: error: " + (dir / "bad.yaml").string() + ":6:60: unknown key 'tries' in a group\n");
}

TEST_CASE("the template builds; without a GPU (and --no-cpu) the verdict is 'skipped', with one it fails") {
    const fs::path dir = scratch("template");
    const fs::path json = dir / "results.json";
    const ProcessResult result =
        cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "--no-cpu", "--json", json.string()});
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

TEST_CASE("without a GPU, check runs the CPU self-check by itself; --cpu and --no-cpu exclude each other") {
    const fs::path dir = scratch("template-cpu");
    const fs::path json = dir / "results.json";
    const ProcessResult both = cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "--cpu", "--no-cpu"});
    CHECK(both.status.code == 2);
    CHECK_THAT(both.output, contains_text("--cpu excludes --no-cpu"));
    if (probe_gpu().available) {
        return;  // with a GPU, check grades on it: the template tests above
    }
    const ProcessResult result = cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "-e", "sum",
                                              "--cache-dir", (dir / "cache").string(), "--json", json.string()});
    INFO(result.output);
    std::ifstream in(json);
    const auto results = nlohmann::json::parse(in);
    CHECK(result.status.code == 1);
    CHECK(results["cpu_self_check"] == true);
    CHECK(results["outcome"] == "failed");
    CHECK_THAT(
        result.output,
        contains_text("no NVIDIA GPU here: a CPU self-check instead, correctness only (--no-cpu: only the build)"));
    CHECK_THAT(result.output,
               contains_text("CPU self-check: correctness only, on the CPU; the grade needs an NVIDIA GPU"));
}

TEST_CASE("bench times the reference, the copy and the baselines; without a GPU it reports skipped") {
    const fs::path dir = scratch("bench");
    const ProcessResult result =
        cugrade_cli({"bench", "--exercise", "sum", "--size", "65536", "--json", (dir / "bench.json").string()});
    if (!probe_gpu().available) {
        CHECK(result.status.code == 77);
        CHECK_THAT(result.output, Catch::Matchers::StartsWith("cugrade: bench needs an NVIDIA GPU: "));
        return;
    }
    CHECK(result.status.code == 0);
    // The checkers (the exercise's own and CUB's in its place) are built before anything is timed.
    CHECK_THAT(result.output, contains_text("\nbuilt 2 checkers in "));
    CHECK_THAT(result.output, contains_text("\ntimed 2 speed tests in "));
    std::ifstream in(dir / "bench.json");
    const auto bench = nlohmann::json::parse(in);
    REQUIRE(bench["rows"].size() == 3);
    for (const auto& row : bench["rows"]) {
        CHECK(row.value("error", std::string()) == "");
    }
    CHECK(bench["rows"][0]["what"] == "reference");
    CHECK(bench["rows"][2]["what"] == "cub");
    CHECK(bench["rows"][0]["gb_per_s"].get<double>() > 0.0);
    CHECK(bench["rows"][2]["reference_over_this"].get<double>() > 0.0);
}

TEST_CASE("cugrade --json writes a regular file through a rename, and refuses links, pipes and devices") {
    const fs::path dir = scratch("json");
    const fs::path target = dir / "elsewhere.json";
    std::ofstream(target) << "untouched\n";
    fs::create_symlink(target, dir / "link.json");
    const std::vector<std::string> grade = {
        "check", CUGRADE_SOURCE_DIR "/student_template", "--exercise", "sum", "--no-cpu", "--json"};
    auto with = [&](const std::string& path) {
        auto args = grade;
        args.push_back(path);
        return cugrade_cli(args);
    };
    ProcessResult result = with((dir / "link.json").string());
    CHECK(result.status.code == 2);
    CHECK_THAT(result.output,
               contains_text("cugrade: error: --json: '" + (dir / "link.json").string() +
                             "' is a symbolic link; give a new file, a regular file to replace, or '-'\n"));
    std::ifstream untouched(target);
    CHECK(std::string(std::istreambuf_iterator<char>(untouched), {}) == "untouched\n");
    result = with("/dev/null");
    CHECK(result.status.code == 2);
    CHECK_THAT(result.output, contains_text("'/dev/null' is a device"));

    result = with((dir / "results.json").string());
    CHECK((result.status.code == 77 || result.status.code == 1));
    CHECK(fs::is_regular_file(dir / "results.json"));
    for (const auto& entry : fs::directory_iterator(dir)) {
        CHECK(entry.path().filename().string().find(".results.json.") == std::string::npos);  // no leftovers
    }
}

TEST_CASE("an exercise named twice is graded once") {
    const fs::path dir = scratch("twice");
    const ProcessResult result = cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "--exercise", "sum",
                                              "--exercise", "sum", "--no-cpu", "--json", (dir / "r.json").string()});
    std::ifstream in(dir / "r.json");
    const auto results = nlohmann::json::parse(in);
    CHECK(results["exercises"].size() == 1);
    CHECK(results["max_points"] == 100.0);
}

TEST_CASE("a broken exercise description stops only its own exercise") {
    const fs::path course = scratch("course");
    fs::copy(CUGRADE_SOURCE_DIR "/exercises", course / "exercises", fs::copy_options::recursive);
    fs::copy(CUGRADE_SOURCE_DIR "/reference", course / "reference", fs::copy_options::recursive);
    fs::copy(CUGRADE_SOURCE_DIR "/rubrics", course / "rubrics", fs::copy_options::recursive);
    std::ofstream(course / "exercises" / "minmax" / "exercise.yaml") << "title: [unclosed\n";
    const fs::path submissions = scratch("two-files");
    fs::copy(CUGRADE_SOURCE_DIR "/student_template/sum.cu", submissions / "sum.cu");
    fs::copy(CUGRADE_SOURCE_DIR "/student_template/minmax.cu", submissions / "minmax.cu");
    const ProcessResult result = cugrade_cli({"check", submissions.string(), "--course", course.string(), "--no-cpu",
                                              "--json", (submissions / "r.json").string()});
    CHECK(result.status.code == 3);  // the course is broken for minmax: not the student's fault
    std::ifstream in(submissions / "r.json");
    const auto results = nlohmann::json::parse(in);
    REQUIRE(results["exercises"].size() == 2);
    CHECK(results["exercises"][0]["exercise"] == "minmax");
    CHECK_THAT(results["exercises"][0]["error"].get<std::string>(),
               contains_text("the course's description of this exercise is broken: "));
    CHECK(results["exercises"][1]["exercise"] == "sum");
    CHECK(results["exercises"][1]["build"]["ok"] == true);
}

TEST_CASE("bench refuses sizes and shapes that are not whole numbers from 1") {
    for (const std::string& size : {"0", "-5", "1e6", "", "18446744073709551617"}) {
        INFO(size);
        const ProcessResult result = cugrade_cli({"bench", "--size", size});
        CHECK(result.status.code == 2);
        CHECK_THAT(result.output, contains_text("--size takes a number of elements from 1 to 17179869184"));
    }
    for (const std::string& shape : {"0x5", "4294967296x4294967296", "8x", "x8", "-1x4"}) {
        INFO(shape);
        const ProcessResult result = cugrade_cli({"bench", "--shape", shape});
        CHECK(result.status.code == 2);
        CHECK_THAT(result.output, contains_text("--shape takes ROWSxCOLS"));
    }
}

TEST_CASE("bench refuses a parameter that its exercise's declaration refuses, with a GPU or without") {
    ProcessResult result = cugrade_cli({"bench", "--exercise", "matmul", "--parameter", "k=1e15"});
    CHECK(result.status.code == 2);
    CHECK(result.output == "cugrade: error: --parameter k=1000000000000000: 'k' must be an integer from 1 to 65536, "
                           "not 1000000000000000 (a and b, m x k and k x n floats, must fit in the GPU's memory)\n");
    result = cugrade_cli({"bench", "--exercise", "histogram", "--parameter", "low=300"});
    CHECK(result.status.code == 2);
    CHECK(result.output == "cugrade: error: --parameter: 'high' must be greater than 'low' (300), not 256\n");
}

TEST_CASE("run from inside a student's folder with '.', the other students' folder is the one hidden") {
    const fs::path parent = scratch("class");
    fs::create_directories(parent / "alice");
    const fs::path before = fs::current_path();
    fs::current_path(parent / "alice");
    GradingSetup setup;
    setup.submissions = ".";
    const GradingContext context = make_grading_context(Course{CUGRADE_SOURCE_DIR}, setup);
    fs::current_path(before);
    const fs::path class_folder = fs::canonical(parent);
    CHECK(std::find(context.hidden.begin(), context.hidden.end(), class_folder) != context.hidden.end());
    CHECK(std::find(context.hidden.begin(), context.hidden.end(), class_folder / "alice") == context.hidden.end());
}

TEST_CASE("cugrade check --require-sandbox takes none, files or full, and a machine that offers it grades") {
    const ProcessResult bad =
        cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "--require-sandbox", "most"});
    CHECK(bad.status.code == 2);
    const ProcessResult full = cugrade_cli({"check", CUGRADE_SOURCE_DIR "/student_template", "--exercise", "sum",
                                            "--no-cpu", "--require-sandbox", "full"});
    SandboxPolicy policy;
    policy.enabled = true;
    policy.gpu = true;
    if (containment(policy).level == Containment::full) {
        CHECK((full.status.code == 77 || full.status.code == 1));
    } else {
        CHECK(full.status.code == 3);
        CHECK_THAT(full.output, contains_text("cugrade: error: --require-sandbox full: this machine contains "
                                              "submissions only as far as"));
    }
}
