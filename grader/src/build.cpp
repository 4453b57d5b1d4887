#include "cugrade/build.hpp"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "cache.hpp"
#include "config.hpp"
#include "course_tools.hpp"
#include "cugrade/error.hpp"
#include "cugrade/inspect.hpp"
#include "cugrade/process.hpp"
#include "diagnostics.hpp"
#include "harness_object.hpp"
#include "link_object.hpp"
#include "object_file.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> nvcc_flags(const std::string& arch) {
    auto flags = nvcc_common_flags();
    flags.push_back("-arch=" + arch);
    return flags;
}

// The submission's process: its object after the runner's loop and the capture runtime, without libcudart.
std::vector<std::string> runner_link_command(const Toolchain& toolchain, const BuildOptions& options,
                                             const std::string& submission_object, const std::string& output) {
    return {toolchain.nvcc, "-arch=" + options.arch, "-cudart", "none", "runner.o", submission_object,
            "-Xlinker",     "-Map=link.map",         "-o",      output};
}

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
    const std::string program = tool_output({toolchain.nm, "program-without-submission"}, dir,
                                            "nm failed on the runner program:");
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
        const std::string exports = tool_output({toolchain.nm, "-D", "--defined-only", m[2].str()}, dir,
                                                "nm failed on " + m[2].str() + ":");
        for (const Symbol& symbol : parse_nm(exports)) {
            names += "X " + m[1].str() + " " + symbol.name + "\n";
        }
    }
    write_file(dir / "program-symbols.txt", names);
    for (const char* file : {"program-without-submission", "entry-stub.cpp", "entry-stub.o", "link.map"}) {
        fs::remove(dir / file);
    }
}

struct HarnessBuild {
    fs::path dir;
    std::shared_ptr<ScratchDir> temporary;
};

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
    auto capture_runtime = compile_course_file(compile, common / "capture" / "capture_runtime.cpp",
                                               "capture_runtime.o", dir, "the capture runtime failed to compile:");
    if (exercise.prebuilt_harness.empty()) {
        if (options.progress) {
            options.progress(fmt::format("building the {} harness and reference for {} (once per course revision "
                                         "and toolchain; this takes a minute)",
                                         exercise.name, options.arch));
        }
        compile_harness_object(exercise, toolchain, {{"-arch=" + options.arch}, exercise.reference_source, true},
                               dir);
    } else {
        fs::copy_file(exercise.prebuilt_harness, dir / "harness.o");
    }

    // The checker holds none of the submission's code: it loads the device code at run time
    // (capture/replay.hpp, through the driver API), so one program serves every submission.
    std::vector<std::string> link = {toolchain.nvcc, "-arch=" + options.arch, "harness.o", "-lcuda", "-o",
                                     "checker"};
    for (const auto& library : exercise.checker_libraries) {
        link.push_back("-l" + library);
    }
    const ProcessResult linked = run_tool(link, dir, course_tool_seconds * 5);
    if (!linked.status.success()) {
        throw UsageError(command_failure(
            linked,
            exercise.prebuilt_harness.empty()
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

// Why a step failed, judged from the machine rather than from the output (which the student's code can fill with
// any words it likes, through #error or a symbol's name).
enum class Blame {
    submission,            // the tool ran to its end and refused the file: the same file always fails, so it is cached
    submission_this_time,  // a limit or a crash of the tool stopped it: perhaps a template bomb, perhaps a busy
                           // machine; the verdict stands for this grading and is not cached
    machine,               // the disk is full, or the harness object changed under the build: nobody's verdict
};

Blame blame(const ProcessResult& result, const fs::path& dir, const std::function<bool()>& inputs_intact) {
    struct statvfs disk {};
    const bool disk_full = ::statvfs(dir.c_str(), &disk) == 0 &&
                           static_cast<std::uint64_t>(disk.f_bavail) * disk.f_frsize < (std::uint64_t{64} << 20);
    if (disk_full || !inputs_intact()) {
        return Blame::machine;
    }
    return result.status.exited() && result.status.limit.empty() ? Blame::submission : Blame::submission_this_time;
}

[[noreturn]] void fail_not_the_submissions(const std::string& step, const ProcessResult& result) {
    std::string output = result.output.size() > 4000 ? result.output.substr(result.output.size() - 4000) : result.output;
    throw std::runtime_error(fmt::format(
        "the build failed for a reason that is not the submission's (a full disk, or the harness changed while it "
        "was linked): the {} {}{}{}",
        step, result.status.describe(), output.empty() ? "" : ":\n", output));
}

}  // namespace

fs::path default_cache_dir() {
    if (const char* dir = std::getenv("CUGRADE_CACHE_DIR"); dir != nullptr && *dir != '\0') {
        return dir;
    }
    if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir != nullptr && *dir != '\0') {
        return fs::path(dir) / "cugrade";
    }
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
        return fs::path(home) / ".cache" / "cugrade";
    }
    return fs::temp_directory_path() / "cugrade-cache";
}

BuildResult build_submission(const Exercise& exercise, const SubmissionFile& submission, const Toolchain& toolchain,
                             const BuildOptions& options) {
    if (!options.cache_dir.empty()) {
        tidy_cache(options.cache_dir, options.cache_max_bytes > 0 ? options.cache_max_bytes : UINT64_MAX);
    }
    CacheKey harness_key;
    const HarnessBuild harness = build_harness(exercise, toolchain, options, harness_key);

    CacheKey key;
    key.add("harness", harness_key.text()).add("submission", submission.bytes);
    CacheEntry entry(options.cache_dir, "submission-" + exercise.name, key);
    BuildResult result;
    result.temporary = std::make_shared<std::pair<std::shared_ptr<ScratchDir>, std::shared_ptr<ScratchDir>>>(
        harness.temporary, entry.scratch());
    result.program_symbols = harness.dir / "program-symbols.txt";
    const auto present = [&](const fs::path& dir) {
        result.object = dir / "submission.o";
        result.diagnostics = present_diagnostics(read_file(dir / "diagnostics.txt"), exercise.submission_file,
                                                 submission.shown.string());
        const std::string outcome = read_file(dir / "outcome.txt");
        result.ok = outcome == "ok";
        if (result.ok) {
            result.program = harness.dir / "checker";
            result.link_map = dir / "link.map";
            result.runner = dir / "runner";
            result.device_code = dir / "device-code.fatbin";
        } else {
            result.step = outcome;
        }
    };
    if (entry.hit()) {
        result.cached = true;
        present(entry.path());
        return result;
    }

    const fs::path dir = entry.start();
    // The submission is compiled in a folder of its own, with its contract beside it: the sandbox shows the compiler
    // this folder, the toolkit and the system's headers, nothing else of the host (no #include or .incbin of the
    // course, the cache or another student's file), and a cached build can only depend on what the key holds.
    write_file(dir / exercise.submission_file, submission.bytes);
    const std::string contract = exercise.contract_header.filename().string();
    fs::copy_file(exercise.contract_header, dir / contract, fs::copy_options::overwrite_existing);
    SandboxPolicy sandbox = options.sandbox;
    sandbox.readable = {toolchain.toolkit_root};
    const std::vector<std::pair<std::string, std::string>> environment = {
        {"PATH", fs::path(toolchain.nvcc).parent_path().string() + ":" + system_path_variable}};
    const auto finish = [&](const std::string& outcome, const std::string& messages) {
        // Stored as the compiler wrote them, with paths relative to the build folder; shown per grading.
        std::string raw = messages;
        for (std::size_t at = raw.find(dir.string() + "/"); at != std::string::npos;
             at = raw.find(dir.string() + "/", at)) {
            raw.erase(at, dir.string().size() + 1);
        }
        write_file(dir / "outcome.txt", outcome);
        write_file(dir / "diagnostics.txt", raw);
        std::vector<std::string> files = {exercise.submission_file, "outcome.txt", "diagnostics.txt"};
        if (fs::exists(dir / "submission.o")) {
            files.emplace_back("submission.o");
        }
        if (outcome == "ok") {
            files.insert(files.end(), {"link.map", "runner", "device-code.fatbin"});
        }
        entry.commit(files);
        present(entry.path());
    };

    std::vector<std::string> compile = {toolchain.nvcc};
    for (const auto& flag : nvcc_flags(options.arch)) {
        compile.push_back(flag);
    }
    compile.insert(compile.end(), {"-I.", "-include", contract, "-c", exercise.submission_file, "-o", "submission.o"});
    const ProcessResult compiled = run_tool(compile, dir, options.compile_seconds, sandbox, environment);
    const auto stopped = [&](const ProcessResult& process, const std::string& step) {
        // Not cached: the next grading tries again.
        result.step = step;
        result.diagnostics = present_diagnostics(process.output, exercise.submission_file, submission.shown.string()) +
                             fmt::format("\nnvcc {} (the {} may take at most {} s): simplify the file, or ask your instructor\n",
                                         process.status.describe(), step, options.compile_seconds);
    };
    if (!compiled.status.success()) {
        switch (blame(compiled, dir, [] { return true; })) {
            case Blame::submission: finish("compile", compiled.output); return result;
            case Blame::submission_this_time: stopped(compiled, "compile"); return result;
            case Blame::machine: fail_not_the_submissions("compile", compiled);
        }
    }

    // Linked as prepared (link_object.hpp) into the submission's process, with a copy of the runner's object beside
    // it, so that no message names the cache.
    const ObjectFile object = read_object(dir / "submission.o", toolchain);
    prepare_for_link(dir / "submission.o", object, dir / "submission-linked.o", toolchain);
    fs::copy_file(harness.dir / "runner.o", dir / "runner.o", fs::copy_options::overwrite_existing);
    ProcessResult linked = run_tool(runner_link_command(toolchain, options, "submission-linked.o", "runner"), dir,
                                    options.compile_seconds, sandbox, environment);
    fs::remove(dir / "submission-linked.o");
    fs::remove(dir / "runner.o");
    if (!linked.status.success()) {
        const auto harness_intact = [&] { return CacheEntry::intact(harness.dir, "runner.o"); };
        switch (blame(linked, dir, harness_intact)) {
            case Blame::submission: break;
            case Blame::submission_this_time: stopped(linked, "link"); return result;
            case Blame::machine: fail_not_the_submissions("link", linked);
        }
        for (const auto& entry_point : exercise.entry_points) {
            if (linked.output.find(fmt::format("undefined reference to `{}'", entry_point)) != std::string::npos) {
                linked.output += fmt::format("hint: {} must define {}() exactly as {} declares it\n",
                                             exercise.submission_file, entry_point, contract);
            }
        }
        // The runner has the CUDA runtime calls a contract permits (capture_runtime.cpp), no others.
        std::set<std::string> unavailable;
        static const std::regex undefined_cuda_call(R"(undefined reference to `(cuda[A-Za-z0-9_]*|cu[A-Z][A-Za-z0-9_]*)')");
        for (std::sregex_iterator it(linked.output.begin(), linked.output.end(), undefined_cuda_call), end; it != end;
             ++it) {
            unavailable.insert((*it)[1].str());
        }
        for (const auto& call : unavailable) {
            linked.output += fmt::format("hint: {} calls {}, which submissions may not use: the grader runs your host "
                                         "code with the CUDA calls the exercise needs, and no others\n",
                                         exercise.submission_file, call);
        }
        finish("link", linked.output);
        return result;
    }
    // The device code, for the checker to load: the object's .nv_fatbin section (empty when it has no kernels).
    run_course_tool({toolchain.objcopy, "-O", "binary", "--only-section=.nv_fatbin", "submission.o", "device-code.fatbin"},
                    dir, "objcopy could not take the device code out of the submission:");
    finish("ok", compiled.output);  // the compiler's warnings
    return result;
}

}  // namespace cugrade
