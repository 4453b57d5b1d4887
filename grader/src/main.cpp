// The cugrade command line: parses options, calls the library, prints, and maps the outcome to an exit code.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "config.hpp"
#include "cugrade/bench.hpp"
#include "cugrade/build.hpp"
#include "cugrade/check.hpp"
#include "cugrade/error.hpp"
#include "cugrade/exit_codes.hpp"
#include "cugrade/process.hpp"

namespace {

namespace fs = std::filesystem;
using namespace cugrade;

fs::path course_root(const std::string& option) {
    if (!option.empty()) {
        return option;
    }
    if (const char* env = std::getenv("CUGRADE_COURSE"); env != nullptr && *env != '\0') {
        return env;
    }
    return CUGRADE_COURSE_DIR;
}

// Written beside its final name and moved into place, so a reader never sees half a file.
void write_json(const std::string& destination, const nlohmann::json& json) {
    const std::string text = json.dump(2) + "\n";
    if (destination == "-") {
        std::cout << text;
        return;
    }
    const fs::path path = destination;
    const fs::path partial = path.string() + ".partial";
    {
        std::ofstream out(partial);
        out << text;
        if (!out) {
            throw UsageError(fmt::format("cannot write '{}'", path.string()));
        }
    }
    fs::rename(partial, path);
}

Shape parse_shape(const std::string& text) {
    const auto x = text.find('x');
    try {
        if (x != std::string::npos) {
            return {std::stoull(text.substr(0, x)), std::stoull(text.substr(x + 1))};
        }
    } catch (const std::exception&) {
    }
    throw UsageError(fmt::format("--shape takes ROWSxCOLS, such as 8192x8192, not '{}'", text));
}

int terminal_width() {
    if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
        const int width = std::atoi(columns);
        if (width >= 60) {
            return width;
        }
    }
    return 110;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"cugrade: builds, checks and times CUDA kernel exercises against their rubrics", "cugrade"};
    app.set_version_flag("--version", std::string("cugrade ") + CUGRADE_VERSION);
    app.require_subcommand(1);

    CheckOptions options;
    std::string submission_dir = ".";
    std::string rubric;
    std::string json_file;
    std::string course;
    std::string cache_dir;
    std::string nvcc;
    bool no_cache = false;
    bool show_hidden = false;

    CLI::App* check_command = app.add_subcommand("check", "grade the submission in a folder");
    check_command->add_option("submission_dir", submission_dir, "the folder that holds the submission (default: .)");
    check_command->add_option("--exercise,-e", options.exercises,
                              "grade only this exercise (repeatable; default: every exercise whose file is there)");
    check_command->add_option("--rubric", rubric, "grade with this rubric instead of rubrics/NAME.yaml");
    check_command->add_option("--json", json_file, "also write the results as JSON to this file ('-': stdout)");
    check_command->add_option("--course", course, "the folder with exercises/, reference/ and rubrics/");
    check_command->add_option("--cache-dir", cache_dir, "where builds are cached (default: ~/.cache/cugrade)");
    check_command->add_flag("--no-cache", no_cache, "build from scratch and keep nothing");
    check_command->add_option("--nvcc", nvcc, "the nvcc to build with");
    check_command->add_flag("--show-hidden", show_hidden, "show the names and details of hidden cases (instructors)");

    BenchOptions bench_options;
    std::vector<std::uint64_t> bench_sizes;
    std::vector<std::string> bench_shapes;
    CLI::App* bench_command = app.add_subcommand(
        "bench", "time each exercise's reference against its library baseline and the copy bandwidth");
    bench_command->add_option("--exercise,-e", bench_options.exercises, "only this exercise (repeatable)");
    bench_command->add_option("--size", bench_sizes, "element count for vector exercises (repeatable)");
    bench_command->add_option("--shape", bench_shapes, "ROWSxCOLS for matrix exercises (repeatable)");
    bench_command->add_option("--json", json_file, "also write the figures as JSON to this file ('-': stdout)");
    bench_command->add_option("--course", course, "the folder with exercises/, reference/ and rubrics/");
    bench_command->add_option("--cache-dir", cache_dir, "where builds are cached (default: ~/.cache/cugrade)");
    bench_command->add_option("--nvcc", nvcc, "the nvcc to build with");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {
            return app.exit(e);  // --help, --version
        }
        std::cerr << "cugrade: error: " << e.what() << "\n(run 'cugrade check --help' for the options)\n";
        return to_int(ExitCode::invalid);
    }

    try {
        kill_children_on_interrupt();
        options.submission_dir = submission_dir;
        if (!rubric.empty()) {
            options.rubric = rubric;
        }
        if (!nvcc.empty()) {
            options.nvcc = nvcc;
        }
        options.cache_dir = no_cache ? fs::path{} : cache_dir.empty() ? default_cache_dir() : fs::path(cache_dir);
        options.progress = &std::cerr;

        if (bench_command->parsed()) {
            for (const auto size : bench_sizes) {
                bench_options.sizes.push_back({size});
            }
            for (const auto& text : bench_shapes) {
                bench_options.shapes.push_back(parse_shape(text));
            }
            bench_options.nvcc = options.nvcc;
            bench_options.cache_dir = options.cache_dir;
            bench_options.progress = &std::cerr;
            const BenchReport report = bench(Course{course_root(course)}, bench_options);
            if (!report.gpu.available) {
                std::cerr << "cugrade: bench needs an NVIDIA GPU: " << report.gpu.unavailable_reason << "\n";
                return to_int(ExitCode::skipped);
            }
            print_bench(json_file == "-" ? std::cerr : std::cout, report);
            if (!json_file.empty()) {
                write_json(json_file, bench_to_json(report));
            }
            return to_int(ExitCode::passed);
        }
        const Report report = check(Course{course_root(course)}, options);
        ReportOptions report_options;
        report_options.show_hidden = show_hidden;
        report_options.width = terminal_width();
        print_report(json_file == "-" ? std::cerr : std::cout, report, report_options);
        if (!json_file.empty()) {
            write_json(json_file, report_to_json(report, report_options));
        }
        return to_int(report.exit_code());
    } catch (const UsageError& e) {
        std::cerr << "cugrade: error: " << e.what() << "\n";
        return to_int(ExitCode::invalid);
    } catch (const std::exception& e) {
        std::cerr << "cugrade: error: " << e.what() << "\n";
        return to_int(ExitCode::internal_error);
    }
}
