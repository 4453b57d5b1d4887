#include "cpu_build.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "config.hpp"
#include "course_tools.hpp"
#include "cpu_source.hpp"
#include "cugrade/error.hpp"
#include "diagnostics.hpp"
#include "file_io.hpp"
#include "hash.hpp"
#include "scratch_dir.hpp"

namespace cugrade {
namespace fs = std::filesystem;

namespace {

bool is_cuda_source(const fs::path& file) { return file.extension() == ".cu" || file.extension() == ".cuh"; }

// `from` copied to `to`, its CUDA sources rewritten for the CPU (their lines where they were).
void stage_tree(const fs::path& from, const fs::path& to) {
    for (const fs::path& file : regular_files_under(from)) {
        const fs::path target = to / fs::relative(file, from);
        fs::create_directories(target.parent_path());
        write_file(target, is_cuda_source(file) ? rewrite_for_cpu(read_file(file)) : read_file(file));
    }
}

std::vector<std::string> compile_flags(const fs::path& staged) {
    // -fno-finite-loops: an endless loop without side effects spins, as on the GPU, instead of being assumed away.
    return {cpu_compiler(), "-std=c++20", "-O2", "-fno-finite-loops", "-DCUGRADE_CPU",
            "-I", (staged / "common" / "cpu" / "include").string(), "-I", (staged / "common").string(),
            "-I", (staged / "exercise").string(), "-I", CUGRADE_JSON_INCLUDE_DIR};
}

// The course's part, which no submission changes: the harness, the reference, the CPU runtime. Kept in the cache
// under a key of everything they are built from.
std::vector<fs::path> course_objects(const Exercise& exercise, const fs::path& staged, const CpuBuildOptions& options) {
    const fs::path common = exercise.directory.parent_path() / "common";
    std::string key = cpu_compiler() + "\n";
    for (const fs::path& file : regular_files_under(common)) {
        key += fs::relative(file, common).string() + " " + file_digest(file) + "\n";
    }
    for (const fs::path& file : {exercise.harness_source, exercise.contract_header, exercise.reference_source}) {
        key += file.filename().string() + " " + file_digest(file) + "\n";
    }
    const fs::path dir = options.cache_dir.empty() ? options.work_dir / "course"
                                                   : options.cache_dir / "cpu" / (exercise.name + "-" + hex64(fnv1a64(key)));
    const std::vector<fs::path> objects = {dir / "harness.o", dir / "reference.o", dir / "block_runner.o",
                                           dir / "cuda_on_cpu.o"};
    if (fs::exists(dir / "key.txt") && read_file(dir / "key.txt") == key) {
        return objects;
    }
    fs::create_directories(dir);
    const auto compile = [&](std::vector<std::string> extra, const fs::path& source, const fs::path& object,
                             const std::string& what) {
        std::vector<std::string> command = compile_flags(staged);
        command.insert(command.end(), extra.begin(), extra.end());
        command.insert(command.end(), {"-c", source.string(), "-o", object.string()});
        run_course_tool(command, dir, what);
    };
    compile({"-x", "c++"}, staged / "exercise" / exercise.harness_source.filename(), objects[0],
            fmt::format("the {} harness failed to compile for the CPU:", exercise.name));
    // Renamed as the GPU build renames it, so that the harness finds it as cugrade_reference_NAME.
    std::vector<std::string> renamed = {"-x", "c++"};
    for (const auto& entry : exercise.entry_points) {
        renamed.push_back(fmt::format("-D{}=cugrade_reference_{}", entry, entry));
    }
    compile(renamed, staged / "reference.cu", objects[1],
            fmt::format("the {} reference failed to compile for the CPU:", exercise.name));
    compile({}, common / "cpu" / "block_runner.cpp", objects[2], "the CPU runtime failed to compile:");
    compile({}, common / "cpu" / "cuda_on_cpu.cpp", objects[3], "the CPU runtime failed to compile:");
    write_file(dir / "key.txt", key);
    return objects;
}

}  // namespace

std::string cpu_compiler() {
    const char* chosen = std::getenv("CXX");
    return chosen != nullptr && *chosen != '\0' ? chosen : "c++";
}

std::optional<std::string> cpu_self_check_missing() {
    ScratchDir scratch;
    const fs::path probe = scratch.path() / "probe.cpp";
    write_file(probe, "#include <boost/context/fiber.hpp>\n");
    ProcessResult found;
    try {
        found = run_tool({cpu_compiler(), "-std=c++20", "-fsyntax-only", probe.string()}, scratch.path(),
                         course_tool_seconds);
    } catch (const std::exception&) {
        found.status.code = 127;
    }
    if (found.status.exited() && found.status.code == 127) {
        return fmt::format("no C++ compiler ({}; Debian and Ubuntu: apt-get install g++)", cpu_compiler());
    }
    if (found.status.success()) {
        return std::nullopt;
    }
    if (found.output.find("boost/context") != std::string::npos) {
        return "no Boost.Context (Debian and Ubuntu: apt-get install libboost-context-dev)";
    }
    return fmt::format("the C++ compiler {} does not compile C++20", cpu_compiler());
}

CpuBuildResult build_for_cpu(const Exercise& exercise, const SubmissionFile& submission,
                             const CpuBuildOptions& options) {
    CpuBuildResult result;
    if (exercise.harness_source.empty() || exercise.reference_source.empty()) {
        throw UsageError(fmt::format("the CPU self-check of {} needs its harness and reference as sources; this kit has "
                                     "them compiled for NVIDIA GPUs only",
                                     exercise.name));
    }
    const fs::path staged = options.work_dir / "cpu";
    fs::remove_all(staged);
    const fs::path common = exercise.directory.parent_path() / "common";
    try {
        stage_tree(common, staged / "common");
        fs::create_directories(staged / "exercise");
        for (const fs::path& file : {exercise.harness_source, exercise.contract_header}) {
            write_file(staged / "exercise" / file.filename(), rewrite_for_cpu(read_file(file)));
        }
        write_file(staged / "reference.cu", rewrite_for_cpu(read_file(exercise.reference_source)));
    } catch (const std::runtime_error& e) {
        throw UsageError(fmt::format("the {} exercise cannot be staged for the CPU: {}", exercise.name, e.what()));
    }
    const std::vector<fs::path> course = course_objects(exercise, staged, options);

    const fs::path student = staged / "student";
    fs::create_directories(student);
    try {
        write_file(student / submission.name, rewrite_for_cpu(submission.bytes));
    } catch (const std::runtime_error& e) {
        result.step = "rewrite";
        result.diagnostics = fmt::format("{}: {}\n", submission.shown.string(), e.what());
        return result;
    }
    SandboxPolicy sandbox = options.sandbox;
    sandbox.readable = {staged, course.front().parent_path(), fs::path(CUGRADE_JSON_INCLUDE_DIR)};
    std::vector<std::string> compile = compile_flags(staged);
    // -g1: the line tables, from which a memory fault's line is read (cpu_fault.cpp).
    compile.insert(compile.end(), {"-g1", "-x", "c++", "-c", submission.name, "-o", "submission.o"});
    const ProcessResult compiled = run_tool(compile, student, options.compile_seconds, sandbox);
    if (!compiled.status.success()) {
        result.step = "compile";
        result.diagnostics =
            present_diagnostics(compiled.output, submission.name, submission.shown.string()) +
            (compiled.status.exited() ? "" : fmt::format("\nthe compiler {}\n", compiled.status.describe()));
        return result;
    }
    std::vector<std::string> link = {cpu_compiler(), "submission.o"};
    for (const fs::path& object : course) {
        link.push_back(object.string());
    }
    link.insert(link.end(), {"-lboost_context", "-o", "program"});
    const ProcessResult linked = run_tool(link, student, options.compile_seconds, sandbox);
    if (!linked.status.success()) {
        if (linked.output.find("boost_context") != std::string::npos) {
            throw UsageError("the CPU self-check needs Boost.Context (Debian and Ubuntu: apt-get install "
                             "libboost-context-dev)");
        }
        result.step = "link";
        result.diagnostics = present_diagnostics(linked.output, submission.name, submission.shown.string());
        return result;
    }
    result.ok = true;
    result.program = student / "program";
    return result;
}

}  // namespace cugrade
