#include "build/build.hpp"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <regex>
#include <set>

#include "build/cache.hpp"
#include "build/course_tools.hpp"
#include "base/error.hpp"
#include "sandbox/process.hpp"
#include "build/diagnostics.hpp"
#include "build/harness_stage.hpp"
#include "build/included_headers.hpp"
#include "build/link_object.hpp"
#include "build/object_file.hpp"
#include "build/same_code.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// The submission's code without its comments, kept with its build (same_code.hpp).
const std::string same_code_file = "same-code.txt";
// The headers its compile included, as nvcc lists them (included_headers.hpp).
const std::string dependency_file = "dependencies.d";

std::vector<std::string> nvcc_flags(const std::string& arch) {
    auto flags = nvcc_common_flags();
    flags.push_back("-arch=" + arch);
    return flags;
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
    std::string output =
        result.output.size() > 4000 ? result.output.substr(result.output.size() - 4000) : result.output;
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

namespace {

// The submission's build as cached: what it made, and its messages shown as the user named the file.
BuildResult present(const fs::path& dir, const fs::path& harness_dir, const Exercise& exercise,
                    const SubmissionFile& submission, BuildResult result) {
    result.object = dir / "submission.o";
    if (fs::exists(dir / dependency_file)) {
        result.dependencies = dir / dependency_file;
    }
    result.diagnostics =
        present_diagnostics(read_file(dir / "diagnostics.txt"), exercise.submission_file, submission.shown.string());
    const std::string outcome = read_file(dir / "outcome.txt");
    result.ok = outcome == "ok";
    if (result.ok) {
        result.program = harness_dir / "checker";
        result.link_map = dir / "link.map";
        result.runner = dir / "runner";
        result.device_code = dir / "device-code.fatbin";
        if (fs::exists(dir / same_code_file)) {
            result.same_code = read_file(dir / same_code_file);
        }
    } else {
        result.step = outcome;
    }
    return result;
}

// Commits the build in `dir` to the cache with its outcome ("ok", or the step that failed) and messages.
void store(CacheEntry& entry, const fs::path& dir, const std::string& submission_file, const std::string& outcome,
           const std::string& messages) {
    // Stored as the compiler wrote them, with paths relative to the build folder; shown per grading.
    std::string raw = messages;
    for (std::size_t at = raw.find(dir.string() + "/"); at != std::string::npos;
         at = raw.find(dir.string() + "/", at)) {
        raw.erase(at, dir.string().size() + 1);
    }
    write_file(dir / "outcome.txt", outcome);
    write_file(dir / "diagnostics.txt", raw);
    std::vector<std::string> files = {submission_file, "outcome.txt", "diagnostics.txt"};
    for (const std::string& file : {std::string("submission.o"), dependency_file}) {
        if (fs::exists(dir / file)) {
            files.push_back(file);
        }
    }
    if (outcome == "ok") {
        files.insert(files.end(), {"link.map", "runner", "device-code.fatbin"});
        if (fs::exists(dir / same_code_file)) {
            files.emplace_back(same_code_file);
        }
    }
    entry.commit(files);
}

// The folder a submission is built in, and how its tools run there.
struct BuildFolder {
    fs::path dir;
    std::string contract;  // the contract header's name, beside the submission
    SandboxPolicy sandbox;
    std::vector<std::pair<std::string, std::string>> environment;
};

BuildFolder prepare_folder(const Exercise& exercise, const SubmissionFile& submission, const Toolchain& toolchain,
                           const BuildOptions& options, const fs::path& dir) {
    // The submission is compiled in a folder of its own, with its contract beside it: the sandbox shows the compiler
    // this folder, the toolkit and the system's headers, nothing else of the host (no #include or .incbin of the
    // course, the cache or another student's file), and a cached build can only depend on what the key holds.
    write_file(dir / exercise.submission_file, submission.bytes);
    const std::string contract = exercise.contract_header.filename().string();
    fs::copy_file(exercise.contract_header, dir / contract, fs::copy_options::overwrite_existing);
    write_file(dir / submission_start_header, "");
    SandboxPolicy sandbox = options.sandbox;
    sandbox.readable = {toolchain.toolkit_root};
    const std::vector<std::pair<std::string, std::string>> environment = {
        {"PATH", fs::path(toolchain.nvcc).parent_path().string() + ":" + system_path_variable}};
    return {dir, contract, sandbox, environment};
}

ProcessResult compile(const BuildFolder& folder, const Exercise& exercise, const Toolchain& toolchain,
                      const BuildOptions& options) {
    std::vector<std::string> compile = {toolchain.nvcc};
    for (const auto& flag : nvcc_flags(options.arch)) {
        compile.push_back(flag);
    }
    // The dependency list comes from the preprocessing nvcc does anyway; the empty header after the contract marks
    // where the submission's own includes start in it.
    compile.insert(compile.end(), {"-I.", "-include", folder.contract, "-include", submission_start_header, "-MD",
                                   "-MF", dependency_file, "-c", exercise.submission_file, "-o", "submission.o"});
    return run_tool(compile, folder.dir, options.compile_seconds, folder.sandbox, folder.environment);
}

// Linked as prepared (link_object.hpp) into the submission's process, with a copy of the runner's object beside it,
// so that no message names the cache.
ProcessResult link(const BuildFolder& folder, const fs::path& harness_dir, const Toolchain& toolchain,
                   const BuildOptions& options) {
    const fs::path& dir = folder.dir;
    const ObjectFile object = read_object(dir / "submission.o", toolchain);
    prepare_for_link(dir / "submission.o", object, dir / "submission-linked.o", toolchain);
    fs::copy_file(harness_dir / "runner.o", dir / "runner.o", fs::copy_options::overwrite_existing);
    ProcessResult linked = run_tool(runner_link_command(toolchain, options, "submission-linked.o", "runner"), dir,
                                    options.compile_seconds, folder.sandbox, folder.environment);
    fs::remove(dir / "submission-linked.o");
    fs::remove(dir / "runner.o");
    return linked;
}

// The linker's messages, with a hint for each entry point left undefined and each CUDA call the runner lacks.
std::string with_link_hints(std::string output, const Exercise& exercise, const std::string& contract) {
    for (const auto& entry_point : exercise.entry_points) {
        if (output.find(fmt::format("undefined reference to `{}'", entry_point)) != std::string::npos) {
            output += fmt::format("hint: {} must define {}() exactly as {} declares it\n", exercise.submission_file,
                                  entry_point, contract);
        }
    }
    // The runner has the CUDA runtime calls a contract permits (capture_runtime.cpp), no others.
    std::set<std::string> unavailable;
    static const std::regex undefined_cuda_call(R"(undefined reference to `(cuda[A-Za-z0-9_]*|cu[A-Z][A-Za-z0-9_]*)')");
    for (std::sregex_iterator it(output.begin(), output.end(), undefined_cuda_call), end; it != end; ++it) {
        unavailable.insert((*it)[1].str());
    }
    for (const auto& call : unavailable) {
        output += fmt::format("hint: {} calls {}, which submissions may not use: the grader runs your host code with "
                              "the CUDA calls the exercise needs, and no others\n",
                              exercise.submission_file, call);
    }
    return output;
}

// What a built submission keeps beside its program: its device code, and its code without comments.
void extract_code(const BuildFolder& folder, const Exercise& exercise, const Toolchain& toolchain,
                  const BuildOptions& options) {
    // The device code, for the checker to load: the object's .nv_fatbin section (empty when it has no kernels).
    run_course_tool(
        {toolchain.objcopy, "-O", "binary", "--only-section=.nv_fatbin", "submission.o", "device-code.fatbin"},
        folder.dir, "objcopy could not take the device code out of the submission:");
    // Past a size, no other submission is likely the same: it keeps its code to itself.
    constexpr std::uintmax_t largest_shared_code = 1 << 20;
    if (write_code_without_comments(folder.dir, exercise.submission_file, same_code_file, options.compile_seconds,
                                    folder.sandbox, folder.environment) &&
        fs::file_size(folder.dir / same_code_file) > largest_shared_code) {
        fs::remove(folder.dir / same_code_file);
    }
}

// How a build that was not in the cache ended.
struct Ending {
    bool cached = true;    // false: a limit or a crash stopped the tool, and the verdict is this grading's alone
    std::string outcome;   // "ok", or the step that failed
    std::string messages;  // the compiler's messages as it wrote them; when not cached, as shown to the user
};

Ending stopped(const ProcessResult& process, const std::string& step, const Exercise& exercise,
               const SubmissionFile& submission, const BuildOptions& options) {
    return {false, step,
            present_diagnostics(process.output, exercise.submission_file, submission.shown.string()) +
                fmt::format("\nnvcc {} (the {} may take at most {} s): simplify the file, or ask your instructor\n",
                            process.status.describe(), step, options.compile_seconds)};
}

Ending build_afresh(const Exercise& exercise, const SubmissionFile& submission, const Toolchain& toolchain,
                    const BuildOptions& options, const fs::path& harness_dir, const fs::path& dir) {
    const BuildFolder folder = prepare_folder(exercise, submission, toolchain, options, dir);
    const ProcessResult compiled = compile(folder, exercise, toolchain, options);
    if (!compiled.status.success()) {
        switch (blame(compiled, dir, [] { return true; })) {
            case Blame::submission: return {true, "compile", compiled.output};
            case Blame::submission_this_time: return stopped(compiled, "compile", exercise, submission, options);
            case Blame::machine: fail_not_the_submissions("compile", compiled);
        }
    }
    ProcessResult linked = link(folder, harness_dir, toolchain, options);
    if (!linked.status.success()) {
        const auto harness_intact = [&] { return CacheEntry::intact(harness_dir, "runner.o"); };
        switch (blame(linked, dir, harness_intact)) {
            case Blame::submission: break;
            case Blame::submission_this_time: return stopped(linked, "link", exercise, submission, options);
            case Blame::machine: fail_not_the_submissions("link", linked);
        }
        return {true, "link", with_link_hints(std::move(linked.output), exercise, folder.contract)};
    }
    extract_code(folder, exercise, toolchain, options);
    return {true, "ok", compiled.output};  // the compiler's warnings
}

}  // namespace

BuildResult build_submission(const Exercise& exercise, const SubmissionFile& submission, const Toolchain& toolchain,
                             const BuildOptions& options) {
    if (!options.cache_dir.empty()) {
        tidy_cache(options.cache_dir, options.cache_max_bytes > 0 ? options.cache_max_bytes : UINT64_MAX);
    }
    CacheKey harness_key;
    const HarnessBuild harness = build_harness(exercise, toolchain, options, harness_key);

    CacheKey key;
    // An entry from before the dependency list was kept is not served: its libraries could not be judged.
    key.add("harness", harness_key.text()).add("submission", submission.bytes).add("dependency list", dependency_file);
    CacheEntry entry(options.cache_dir, "submission-" + exercise.name, key);
    BuildResult result;
    result.temporary = std::make_shared<std::pair<std::shared_ptr<ScratchDir>, std::shared_ptr<ScratchDir>>>(
        harness.temporary, entry.scratch());
    result.program_symbols = harness.dir / "program-symbols.txt";
    if (entry.hit()) {
        result.cached = true;
        return present(entry.path(), harness.dir, exercise, submission, std::move(result));
    }
    const fs::path dir = entry.start();
    const Ending ending = build_afresh(exercise, submission, toolchain, options, harness.dir, dir);
    if (!ending.cached) {
        // Not cached: the next grading tries again.
        result.step = ending.outcome;
        result.diagnostics = ending.messages;
        return result;
    }
    store(entry, dir, exercise.submission_file, ending.outcome, ending.messages);
    return present(entry.path(), harness.dir, exercise, submission, std::move(result));
}

}  // namespace cugrade
