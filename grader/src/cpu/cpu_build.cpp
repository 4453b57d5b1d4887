#include "cpu/cpu_build.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <memory>

#include "build/cache.hpp"
#include "base/config.hpp"
#include "build/course_tools.hpp"
#include "cpu/cpu_source.hpp"
#include "base/error.hpp"
#include "build/diagnostics.hpp"
#include "base/file_io.hpp"
#include "base/hash.hpp"
#include "build/link_object.hpp"
#include "build/object_file.hpp"
#include "base/scratch_dir.hpp"

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
    return {cpu_compiler(),
            "-std=c++20",
            "-O2",
            "-fno-finite-loops",
            "-DCUGRADE_CPU",
            "-I",
            (staged / "common" / "cpu" / "include").string(),
            "-I",
            (staged / "common").string(),
            "-I",
            (staged / "exercise").string(),
            "-I",
            CUGRADE_JSON_INCLUDE_DIR};
}

std::vector<fs::path> course_objects_in(const fs::path& dir) {
    std::vector<fs::path> objects;
    for (const std::string& name : cpu_course_object_files) {
        objects.push_back(dir / name);
    }
    return objects;
}

// Of the course's objects (cpu_course_object_files), the checker's and the runner's: each half has the CPU runtime,
// and only the checker the harness and the reference.
std::vector<fs::path> checker_objects(const std::vector<fs::path>& course) {
    return {course.begin(), course.end() - 1};
}
std::vector<fs::path> runner_objects(const std::vector<fs::path>& course) { return {course.end() - 3, course.end()}; }

// The course's part, which no submission changes: the harness, the reference, the CPU runtime and the runner's loop,
// compiled from the staged sources into `dir`.
std::vector<fs::path> compile_course_objects(const Exercise& exercise, const fs::path& staged, const fs::path& dir) {
    const fs::path common = exercise.common_dir();
    const std::vector<fs::path> objects = course_objects_in(dir);
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
    // The harness's host-only parts, staged beside the rewritten headers they include.
    compile({}, staged / "common" / "plan_loop.cpp", objects[2],
            "the harness's case loop failed to compile for the CPU:");
    compile({}, staged / "common" / "case_record.cpp", objects[3],
            "the harness's result records failed to compile for the CPU:");
    compile({}, staged / "common" / "channel.cpp", objects[4], "the harness's channel failed to compile for the CPU:");
    compile({}, common / "cpu" / "remote_submission.cpp", objects[5],
            "the checker's side of the CPU runner failed to compile:");
    compile({}, common / "cpu" / "block_runner.cpp", objects[6], "the CPU runtime failed to compile:");
    compile({}, common / "cpu" / "cuda_on_cpu.cpp", objects[7], "the CPU runtime failed to compile:");
    // The runner's loop around the entry point (cpu/runner.hpp), against the contract, as the GPU's runner's.
    write_file(dir / "runner_main.cpp",
               fmt::format("#include \"{}\"\n#include \"cpu/runner.hpp\"\n"
                           "int main() {{ return cugrade::cpu::runner::serve(&{}); }}\n",
                           exercise.contract_header.filename().string(), exercise.entry_points.front()));
    compile({}, dir / "runner_main.cpp", objects[8], "the CPU runner's loop failed to compile:");
    fs::remove(dir / "runner_main.cpp");
    return objects;
}

// The checker, linked from the course's objects into `dir`: the same for every submission.
fs::path link_checker(const std::vector<fs::path>& course, const fs::path& dir) {
    std::vector<std::string> link = {cpu_compiler()};
    for (const fs::path& object : checker_objects(course)) {
        link.push_back(object.string());
    }
    link.insert(link.end(), {"-lboost_context", "-o", (dir / "checker").string()});
    const ProcessResult linked = run_tool(link, dir, course_tool_seconds);
    if (!linked.status.success()) {
        if (linked.output.find("boost_context") != std::string::npos) {
            throw UsageError("the CPU self-check needs Boost.Context (Debian and Ubuntu: apt-get install "
                             "libboost-context-dev)");
        }
        throw UsageError(command_failure(linked, "linking the CPU self-check's checker failed:"));
    }
    return dir / "checker";
}

// The course's objects and what keeps them: built once into the cache under a key of everything they are built from
// (published whole, so that a self-check beside the one building them never links half of them), with the checker
// linked from them; in a temporary folder without a cache; or a kit's, prebuilt, its checker linked in `work`.
struct CourseObjects {
    std::vector<fs::path> objects;
    fs::path checker;
    std::shared_ptr<ScratchDir> scratch;  // a build without a cache: held until the link
};

CourseObjects course_objects(const Exercise& exercise, const fs::path& staged, const CpuBuildOptions& options) {
    if (!exercise.prebuilt_cpu_objects.empty()) {
        std::vector<fs::path> objects = course_objects_in(exercise.prebuilt_cpu_objects);
        const fs::path checker = link_checker(objects, options.work_dir);
        return {std::move(objects), checker, nullptr};
    }
    const fs::path common = exercise.common_dir();
    CacheKey key;
    key.add("compiler", cpu_compiler());
    for (const fs::path& file : regular_files_under(common)) {
        key.add("file " + fs::relative(file, common).string(), file_digest(file));
    }
    for (const fs::path& file : {exercise.harness_source, exercise.contract_header, exercise.reference_source}) {
        key.add_file_digest(file);
    }
    CacheEntry entry(options.cache_dir, "cpu-" + exercise.name, key);
    if (!entry.hit()) {
        const fs::path dir = entry.start();
        link_checker(compile_course_objects(exercise, staged, dir), dir);
        std::vector<std::string> files = cpu_course_object_files;
        files.push_back("checker");
        entry.commit(files);
    }
    return {course_objects_in(entry.path()), entry.path() / "checker", entry.scratch()};
}

// The course's files staged for the CPU under `staged`, every CUDA source rewritten: exercises/common, the contract,
// and where the course has them (not a kit), the harness and the reference.
void stage_course(const Exercise& exercise, const fs::path& staged) {
    const fs::path common = exercise.common_dir();
    try {
        stage_tree(common, staged / "common");
        fs::create_directories(staged / "exercise");
        for (const fs::path& file : {exercise.harness_source, exercise.contract_header}) {
            if (!file.empty()) {
                write_file(staged / "exercise" / file.filename(), rewrite_for_cpu(read_file(file)));
            }
        }
        if (!exercise.reference_source.empty()) {
            write_file(staged / "reference.cu", rewrite_for_cpu(read_file(exercise.reference_source)));
        }
    } catch (const std::runtime_error& e) {
        throw UsageError(fmt::format("the {} exercise cannot be staged for the CPU: {}", exercise.name, e.what()));
    }
}

}  // namespace

std::string cpu_compiler() {
    const char* chosen = std::getenv("CXX");
    return chosen != nullptr && *chosen != '\0' ? chosen : "c++";
}

std::string cpu_target() {
    std::string machine;
    try {
        ScratchDir scratch;
        const ProcessResult said = run_tool({cpu_compiler(), "-dumpmachine"}, scratch.path(), course_tool_seconds);
        machine = said.status.success() ? said.output : "";
    } catch (const std::exception&) {
    }
    machine.erase(machine.find_last_not_of(" \n\r\t") + 1);
    if (machine.empty()) {
        return "";
    }
    // x86_64-linux-gnu and x86_64-pc-linux-gnu (gcc's and clang's) are one machine.
    const std::string arch = machine.substr(0, machine.find('-'));
    const std::string system = machine.find("linux") != std::string::npos    ? "linux"
                               : machine.find("darwin") != std::string::npos ? "darwin"
                                                                             : machine.substr(machine.find('-') + 1);
    return arch + "-" + system;
}

void build_cpu_kit_objects(const Exercise& exercise, const fs::path& work, const fs::path& folder) {
    const fs::path staged = work / "cpu-staged";
    fs::remove_all(staged);
    stage_course(exercise, staged);
    compile_course_objects(exercise, staged, folder);
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

namespace {

// The submission compiled for the CPU into `student`/submission.o, with its line tables; the step that failed and
// the compiler's words, or nothing.
std::optional<CpuBuildResult> compile_submission(const SubmissionFile& submission, const fs::path& staged,
                                                 const fs::path& student, const SandboxPolicy& sandbox,
                                                 const CpuBuildOptions& options) {
    CpuBuildResult result;
    try {
        write_file(student / submission.name, rewrite_for_cpu(submission.bytes));
    } catch (const std::runtime_error& e) {
        result.step = "rewrite";
        result.diagnostics = fmt::format("{}: {}\n", submission.shown.string(), e.what());
        return result;
    }
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
    return std::nullopt;
}

// The runner: the submission's object, prepared as the GPU's runner's is (its initialisers moved where the runner
// calls them after its seccomp filter, its definitions hidden: link_object.hpp), linked with the runner's loop and
// the CPU runtime, and nothing of the harness's or the reference's.
std::optional<CpuBuildResult> link_runner(const SubmissionFile& submission, const std::vector<fs::path>& course,
                                          const fs::path& student, const SandboxPolicy& sandbox,
                                          const CpuBuildOptions& options) {
    prepare_for_link(student / "submission.o", read_object(student / "submission.o", options.toolchain),
                     student / "submission-linked.o", options.toolchain);
    std::vector<std::string> link = {cpu_compiler(), "submission-linked.o"};
    for (const fs::path& object : runner_objects(course)) {
        link.push_back(object.string());
    }
    link.insert(link.end(), {"-lboost_context", "-o", "runner"});
    const ProcessResult linked = run_tool(link, student, options.compile_seconds, sandbox);
    if (linked.status.success()) {
        return std::nullopt;
    }
    if (linked.output.find("boost_context") != std::string::npos) {
        throw UsageError("the CPU self-check needs Boost.Context (Debian and Ubuntu: apt-get install "
                         "libboost-context-dev)");
    }
    CpuBuildResult result;
    result.step = "link";
    result.diagnostics = present_diagnostics(linked.output, submission.name, submission.shown.string());
    return result;
}

}  // namespace

CpuBuildResult build_for_cpu(const Exercise& exercise, const SubmissionFile& submission,
                             const CpuBuildOptions& options) {
    if (exercise.prebuilt_cpu_objects.empty() &&
        (exercise.harness_source.empty() || exercise.reference_source.empty())) {
        throw UsageError(fmt::format("this kit has no CPU self-check of {}: ask your course for a kit made by cugrade "
                                     "{} or later",
                                     exercise.name, CUGRADE_VERSION));
    }
    const fs::path staged = options.work_dir / "cpu";
    fs::remove_all(staged);
    stage_course(exercise, staged);
    const CourseObjects course = course_objects(exercise, staged, options);

    const fs::path student = staged / "student";
    fs::create_directories(student);
    SandboxPolicy sandbox = options.sandbox;
    sandbox.readable = {staged, course.objects.front().parent_path(), fs::path(CUGRADE_JSON_INCLUDE_DIR)};
    if (auto failed = compile_submission(submission, staged, student, sandbox, options)) {
        return *failed;
    }
    if (auto failed = link_runner(submission, course.objects, student, sandbox, options)) {
        return *failed;
    }
    // The checker runs from this grading's folder, beside the runner: the cache it was linked in is hidden.
    fs::copy_file(course.checker, student / "checker", fs::copy_options::overwrite_existing);
    CpuBuildResult result;
    result.ok = true;
    result.checker = student / "checker";
    result.runner = student / "runner";
    return result;
}

}  // namespace cugrade
