#include "build/harness_stage.hpp"

#include <fmt/format.h>

#include <future>
#include <regex>
#include <set>
#include <sstream>

#include "base/config.hpp"
#include "build/course_tools.hpp"
#include "base/error.hpp"
#include "sandbox/process.hpp"
#include "base/file_io.hpp"
#include "build/harness_object.hpp"
#include "build/object_file.hpp"

namespace cugrade {
namespace fs = std::filesystem;

std::vector<std::string> runner_link_command(const Toolchain& toolchain, const BuildOptions& options,
                                             const std::string& submission_object, const std::string& output) {
    return {toolchain.nvcc, "-arch=" + options.arch, "-cudart", "none", "runner.o", submission_object,
            "-Xlinker",     "-Map=link.map",         "-o",      output};
}

namespace {

// The names of the submission's process minus the submission (inspect.hpp): the runner linked with entry points that
// do nothing. Written to program-symbols.txt, one name a line:
//   D NAME          defined in the program (the capture runtime's CUDA calls among them)
//   W NAME          defined weakly by the runner itself, whose copy the linker keeps (it comes first)
//   U NAME          taken from a shared library
//   X LIBRARY NAME  exported by a shared library the program loads
void record_program_symbols(const Exercise& exercise, const Toolchain& toolchain, const BuildOptions& options,
                            const fs::path& dir) {
    std::string stub;
    for (const auto& entry_point : exercise.entry_points) {
        stub += fmt::format("extern \"C\" void {}() {{}}\n", entry_point);
    }
    write_file(dir / "entry-stub.cpp", stub);
    run_course_tool({toolchain.nvcc, "-c", "entry-stub.cpp", "-o", "entry-stub.o"}, dir,
                    "compiling the entry-point stub failed:");
    run_course_tool(runner_link_command(toolchain, options, "entry-stub.o", "program-without-submission"), dir,
                    "linking the runner alone failed:");

    std::set<std::string> runner_local;
    std::string names;
    for (const Symbol& symbol : parse_nm(tool_output({toolchain.nm, "runner.o"}, dir, "nm failed on the runner:"))) {
        if (symbol.defined() && !symbol.global()) {
            runner_local.insert(symbol.name);
        } else if (symbol.weak() || symbol.type == 'u') {
            names += "W " + symbol.name + "\n";
        }
    }
    const std::string program =
        tool_output({toolchain.nm, "program-without-submission"}, dir, "nm failed on the runner program:");
    for (const Symbol& symbol : parse_nm(program)) {
        if (!symbol.defined()) {
            names += "U " + symbol.name + "\n";
        } else if (symbol.global() || runner_local.count(symbol.name) == 0) {
            // A name local in the program but not in the runner comes from a static library: a submission's
            // definition would be linked in its place.
            names += "D " + symbol.name + "\n";
        }
    }
    // "	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)"
    static const std::regex library(R"(^\s*(\S+) => (/\S+) \(0x[0-9a-fA-F]+\))");
    std::istringstream libraries(tool_output({"ldd", "program-without-submission"}, dir, "ldd failed on the runner:"));
    for (std::string line; std::getline(libraries, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, library)) {
            continue;
        }
        const std::string exports =
            tool_output({toolchain.nm, "-D", "--defined-only", m[2].str()}, dir, "nm failed on " + m[2].str() + ":");
        for (const Symbol& symbol : parse_nm(exports)) {
            names += "X " + m[1].str() + " " + symbol.name + "\n";
        }
    }
    write_file(dir / "program-symbols.txt", names);
    for (const char* file : {"program-without-submission", "entry-stub.cpp", "entry-stub.o", "link.map"}) {
        fs::remove(dir / file);
    }
}

}  // namespace

// The harness and the reference, compiled once per course revision and toolchain.
HarnessBuild build_harness(const Exercise& exercise, const Toolchain& toolchain, const BuildOptions& options,
                           CacheKey& key) {
    key.add("cugrade", CUGRADE_VERSION).add("recipe", CUGRADE_BUILD_RECIPE);
    key.add("nvcc", toolchain.nvcc_version).add("arch", options.arch);
    for (const auto& library : exercise.checker_libraries) {
        key.add("link", library);
    }
    std::vector<fs::path> course_files = {exercise.contract_header};
    if (exercise.prebuilt_harness.empty()) {
        course_files.insert(course_files.end(), {exercise.harness_source, exercise.reference_source});
    } else {
        course_files.push_back(exercise.prebuilt_harness);
    }
    for (const auto& file : course_files) {
        key.add_file_digest(file);
    }
    for (const auto& file : regular_files_under(exercise.common_dir())) {
        key.add_file_digest(file);
    }
    CacheEntry entry(options.cache_dir, "harness-" + exercise.name, key);
    if (entry.hit()) {
        return {entry.path(), entry.scratch()};
    }
    const fs::path dir = entry.start();
    const fs::path common = exercise.common_dir();
    const auto compile = course_compile_command(exercise, toolchain, {"-arch=" + options.arch});

    // The runner's half (exercises/common/capture/runner.hpp): its loop around the entry point, and the capture
    // runtime that stands in for libcudart; the submission's object completes it. It compiles beside the harness,
    // whose object is most of a cold course's wait.
    write_file(dir / "runner_main.cpp",
               fmt::format("#include \"{}\"\n#include \"capture/runner.hpp\"\n"
                           "int main() {{ return cugrade::runner::serve(&{}); }}\n",
                           exercise.contract_header.filename().string(), exercise.entry_points.front()));
    auto runner_main =
        compile_course_file(compile, "runner_main.cpp", "runner_main.o", dir, "the runner's loop failed to compile:");
    auto capture_runtime = compile_course_file(compile, common / "capture" / "capture_runtime.cpp", "capture_runtime.o",
                                               dir, "the capture runtime failed to compile:");
    if (exercise.prebuilt_harness.empty()) {
        if (options.progress) {
            options.progress(fmt::format("building the {} harness and reference for {} (once per course revision "
                                         "and toolchain; this takes a minute)",
                                         exercise.name, options.arch));
        }
        compile_harness_object(exercise, toolchain, {{"-arch=" + options.arch}, exercise.reference_source, true}, dir);
    } else {
        fs::copy_file(exercise.prebuilt_harness, dir / "harness.o");
    }

    // The checker holds none of the submission's code: it loads the device code at run time
    // (capture/replay.hpp, through the driver API), so one program serves every submission.
    std::vector<std::string> link = {toolchain.nvcc, "-arch=" + options.arch, "harness.o", "-lcuda", "-o", "checker"};
    for (const auto& library : exercise.checker_libraries) {
        link.push_back("-l" + library);
    }
    const ProcessResult linked = run_tool(link, dir, course_tool_seconds * 5);
    if (!linked.status.success()) {
        throw UsageError(command_failure(
            linked, exercise.prebuilt_harness.empty()
                        ? std::string("linking the checker failed:")
                        : fmt::format("linking the kit's prebuilt harness '{}' with {} ({}) failed; a kit links with "
                                      "the CUDA release it was built with or a newer one (kit.json says which):",
                                      exercise.prebuilt_harness.string(), toolchain.nvcc, toolchain.nvcc_version)));
    }
    runner_main.get();
    capture_runtime.get();
    run_course_tool({toolchain.ld, "-r", "runner_main.o", "capture_runtime.o", "-o", "runner.o"}, dir,
                    "combining the runner's parts failed:");
    record_program_symbols(exercise, toolchain, options, dir);
    for (const char* file : {"harness.o", "runner_main.cpp", "runner_main.o", "capture_runtime.o"}) {
        fs::remove(dir / file);
    }
    entry.commit({"checker", "program-symbols.txt", "runner.o"});
    return {entry.path(), entry.scratch()};
}

}  // namespace cugrade
