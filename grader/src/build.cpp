#include "cugrade/build.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "config.hpp"
#include "cugrade/error.hpp"
#include "cugrade/inspect.hpp"
#include "cugrade/process.hpp"
#include "hash.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

constexpr const char* reference_prefix = "cugrade_reference_";
constexpr double tool_seconds = 60.0;
// The key names this build of cugrade too: a cugrade whose build steps or messages changed never reuses another's.

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw UsageError(fmt::format("cannot read '{}'", path.string()));
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) {
        throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
    }
}

// Everything a build depends on, as text. Two builds with equal keys produce the same program, so a cache entry is
// reused only when its stored key is equal to the letter; the hash merely names the folder.
class CacheKey {
public:
    CacheKey& add(const std::string& label, const std::string& value) {
        text_ += fmt::format("{} {}\n{}\n", label, value.size(), value);
        return *this;
    }
    CacheKey& add_file(const fs::path& path) { return add("file " + path.filename().string(), read_file(path)); }
    const std::string& text() const { return text_; }
    std::string digest() const { return hex64(fnv1a64(text_)); }

private:
    std::string text_;
};

std::vector<std::string> nvcc_flags(const std::string& arch) {
    return {"-std=c++20", "-O3", "-lineinfo", "-arch=" + arch};
}

// A cache entry: a folder named by the key's digest whose key.txt holds the full key.
class CacheEntry {
public:
    CacheEntry(const fs::path& cache_dir, const std::string& kind, const CacheKey& key)
        : key_(key.text()) {
        if (cache_dir.empty()) {
            final_ = fs::temp_directory_path() / fmt::format("cugrade-{}-{}-{}", kind, ::getpid(), key.digest());
            temporary_ = true;
        } else {
            // Absolute: the built program is started from another folder.
            final_ = fs::absolute(cache_dir) / fmt::format("{}-{}", kind, key.digest());
        }
    }

    bool hit() const {
        std::error_code ec;
        return !temporary_ && fs::is_regular_file(final_ / "key.txt", ec) && read_file(final_ / "key.txt") == key_;
    }
    const fs::path& path() const { return final_; }
    bool temporary() const { return temporary_; }

    // A fresh folder to build in; commit() moves it into place, so readers never see a half-built entry.
    fs::path start() {
        if (temporary_) {
            fs::remove_all(final_);
            fs::create_directories(final_);
            return final_;
        }
        fs::create_directories(final_.parent_path());
        staging_ = final_.parent_path() / fmt::format(".staging-{}-{}", ::getpid(), final_.filename().string());
        fs::remove_all(staging_);
        fs::create_directories(staging_);
        return staging_;
    }

    void commit() {
        if (temporary_) {
            return;
        }
        write_file(staging_ / "key.txt", key_);
        std::error_code ec;
        fs::rename(staging_, final_, ec);
        if (ec && !hit()) {
            // An entry of another key holds the name (the digests collided): this build replaces it.
            fs::remove_all(final_, ec);
            fs::rename(staging_, final_, ec);
        }
        // Otherwise another cugrade committed the same entry first, and its copy serves.
        fs::remove_all(staging_, ec);
    }

private:
    std::string key_;
    fs::path final_;
    fs::path staging_;
    bool temporary_ = false;
};

ProcessResult run_tool(std::vector<std::string> argv, const fs::path& cwd, double seconds,
                       const SandboxPolicy& sandbox = {}) {
    ProcessOptions options;
    options.argv = std::move(argv);
    options.working_directory = cwd;
    options.sandbox = sandbox;
    if (options.sandbox.enabled) {
        options.sandbox.work_dir = cwd;
    }
    return run_process(options, std::chrono::duration<double>(seconds));
}

std::string command_failure(const ProcessResult& result, const std::string& what) {
    return fmt::format("{} {}:\n{}", what, result.status.describe(), result.output);
}

void run_course_tool(std::vector<std::string> argv, const fs::path& cwd, const std::string& what) {
    const ProcessResult result = run_tool(argv, cwd, tool_seconds * 5);
    if (!result.status.success()) {
        throw UsageError(command_failure(result, what));
    }
}

// nvcc's front end writes "sum.cu(12): error: ..."; show "student/sum.cu:12: error: ..." like every other tool.
std::string present_diagnostics(const std::string& output, const std::string& file_name, const std::string& shown) {
    const std::string file = std::regex_replace(file_name, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
    const std::string text = std::regex_replace(output, std::regex("(^|\n)" + file + R"(\((\d+)\): )"),
                                                "$1" + shown + ":$2: ");
    return std::regex_replace(text, std::regex("(^|\n)" + file + ":"), "$1" + shown + ":");
}

std::vector<std::string> link_command(const Toolchain& toolchain, const BuildOptions& options,
                                      std::vector<std::string> objects, const std::string& output) {
    std::vector<std::string> link = {toolchain.nvcc, "-arch=" + options.arch};
    link.insert(link.end(), objects.begin(), objects.end());
    if (!toolchain.cupti_dir.empty()) {
        link.insert(link.end(), {"-L" + toolchain.cupti_dir.string(), "-lcupti", "-Xlinker",
                                 "-rpath=" + toolchain.cupti_dir.string()});
    }
    link.insert(link.end(), {"-o", output});
    return link;
}

// The names of the finished program minus the submission (inspect.hpp): the harness linked with entry points that
// do nothing. Written to program-symbols.txt as "D NAME" (defined) and "U NAME" (taken from a shared library).
void record_program_symbols(const Exercise& exercise, const Toolchain& toolchain, const BuildOptions& options,
                            const fs::path& dir) {
    std::string stub;
    for (const auto& entry_point : exercise.entry_points) {
        stub += fmt::format("extern \"C\" void {}() {{}}\n", entry_point);
    }
    write_file(dir / "entry-stub.cpp", stub);
    run_course_tool({toolchain.nvcc, "-c", "entry-stub.cpp", "-o", "entry-stub.o"}, dir,
                    "compiling the entry-point stub failed:");
    run_course_tool(link_command(toolchain, options, {"harness.o", "entry-stub.o"}, "program-without-submission"),
                    dir, "linking the harness alone failed:");
    const ProcessResult symbols = run_tool({toolchain.nm, "program-without-submission"}, dir, tool_seconds);
    if (!symbols.status.success()) {
        throw UsageError(command_failure(symbols, "nm failed on the harness program:"));
    }
    std::string names;
    for (const Symbol& symbol : parse_nm(symbols.output)) {
        const std::string& name = symbol.name;
        // The static CUDA runtime's API ends up local in the program, yet a submission's global definition of
        // one of its names would still be linked in its place.
        const bool runtime_api = name.rfind("cuda", 0) == 0 || name.rfind("__cuda", 0) == 0 ||
                                 (name.size() > 2 && name.rfind("cu", 0) == 0 && std::isupper(static_cast<unsigned char>(name[2])));
        if (!symbol.defined()) {
            names += "U " + name + "\n";
        } else if (symbol.global() || runtime_api) {
            names += "D " + name + "\n";
        }
    }
    write_file(dir / "program-symbols.txt", names);
    fs::remove(dir / "program-without-submission");
}

// The harness and the reference, compiled once per course revision and toolchain.
fs::path build_harness(const Exercise& exercise, const Toolchain& toolchain, const BuildOptions& options,
                       CacheKey& key) {
    key.add("cugrade", CUGRADE_VERSION " built " __DATE__ " " __TIME__).add("nvcc", toolchain.nvcc_version).add("arch", options.arch);
    key.add("cupti", toolchain.cupti_dir.string());
    key.add_file(exercise.harness_source).add_file(exercise.reference_source).add_file(exercise.contract_header);
    std::vector<fs::path> common_files;
    for (const auto& file : fs::directory_iterator(exercise.directory.parent_path() / "common")) {
        common_files.push_back(file.path());
    }
    std::sort(common_files.begin(), common_files.end());
    for (const auto& file : common_files) {
        key.add_file(file);
    }
    CacheEntry entry(options.cache_dir, "harness-" + exercise.name, key);
    if (entry.hit()) {
        return entry.path() / "harness.o";
    }
    const fs::path dir = entry.start();
    const fs::path common = exercise.directory.parent_path() / "common";
    std::vector<std::string> compile = {toolchain.nvcc};
    for (const auto& flag : nvcc_flags(options.arch)) {
        compile.push_back(flag);
    }
    for (const auto& include : {exercise.directory, common}) {
        compile.push_back("-I" + include.string());
    }
    for (const auto& include : toolchain.include_dirs) {
        compile.push_back("-I" + include.string());
    }
    if (!toolchain.cupti_dir.empty()) {
        compile.push_back("-DCUGRADE_HAVE_CUPTI=1");
    }

    auto reference = compile;
    reference.insert(reference.end(), {"-c", exercise.reference_source.string(), "-o", "reference.o"});
    run_course_tool(reference, dir, fmt::format("the reference '{}' failed to compile:", exercise.reference_source.string()));
    std::vector<std::string> rename = {toolchain.objcopy};
    for (const auto& entry_point : exercise.entry_points) {
        rename.push_back(fmt::format("--redefine-sym={}={}{}", entry_point, reference_prefix, entry_point));
    }
    rename.push_back("reference.o");
    run_course_tool(rename, dir, "objcopy failed on the reference:");

    auto harness = compile;
    harness.insert(harness.end(), {"-c", exercise.harness_source.string(), "-o", "harness_main.o"});
    run_course_tool(harness, dir, fmt::format("the harness '{}' failed to compile:", exercise.harness_source.string()));
    run_course_tool({toolchain.ld, "-r", "harness_main.o", "reference.o", "-o", "harness.o"}, dir,
                    "combining the harness with the reference failed:");

    // Every strong symbol the harness and reference define becomes local, main excepted: the submission can neither
    // call them nor collide with them (a kernel named like the reference's is fine).
    const ProcessResult symbols = run_tool({toolchain.nm, "-g", "--defined-only", "harness.o"}, dir, tool_seconds);
    if (!symbols.status.success()) {
        throw UsageError(command_failure(symbols, "nm failed on the harness:"));
    }
    std::istringstream lines(symbols.output);
    std::string line;
    std::string local;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        std::string address, type, name;
        if (fields >> address >> type >> name && std::string("TDBRG").find(type) != std::string::npos &&
            name != "main") {
            local += name + "\n";
        }
    }
    write_file(dir / "local-symbols.txt", local);
    run_course_tool({toolchain.objcopy, "--localize-symbols=local-symbols.txt", "harness.o"}, dir,
                    "objcopy failed on the harness:");
    record_program_symbols(exercise, toolchain, options, dir);
    entry.commit();
    return entry.path() / "harness.o";
}

// `tool` from the folder `program` lives in (found on PATH when it names no folder), else from PATH; or empty.
std::string find_beside(const std::string& program, const std::string& tool) {
    std::vector<fs::path> dirs;
    if (program.find('/') != std::string::npos) {
        dirs.push_back(fs::path(program).parent_path());
    }
    if (const char* path = std::getenv("PATH"); path != nullptr) {
        std::istringstream entries(path);
        for (std::string entry; std::getline(entries, entry, ':');) {
            if (!entry.empty() && program.find('/') == std::string::npos && fs::exists(fs::path(entry) / program)) {
                dirs.insert(dirs.begin(), entry);
            }
            dirs.push_back(entry);
        }
    }
    for (const auto& dir : dirs) {
        if (::access((dir / tool).c_str(), X_OK) == 0) {
            return (dir / tool).string();
        }
    }
    return "";
}

// libcupti of nvcc's toolkit: lib64/, lib/ or extras/CUPTI/lib64/ beside its bin/.
fs::path find_cupti(const std::string& nvcc) {
    fs::path program = nvcc;
    if (nvcc.find('/') == std::string::npos) {
        const std::string beside = find_beside(nvcc, nvcc);  // nvcc itself, found on PATH
        if (beside.empty()) {
            return {};
        }
        program = beside;
    }
    std::error_code ec;
    const fs::path toolkit = fs::canonical(program, ec).parent_path().parent_path();
    if (ec) {
        return {};
    }
    for (const char* dir : {"lib64", "lib", "extras/CUPTI/lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"}) {
        if (fs::exists(toolkit / dir / "libcupti.so", ec)) {
            return toolkit / dir;
        }
    }
    return {};
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

Toolchain find_toolchain(const std::optional<std::string>& preferred) {
    std::vector<std::string> candidates;
    if (preferred) {
        candidates.push_back(*preferred);
    } else {
        if (const char* env = std::getenv("CUGRADE_NVCC"); env != nullptr && *env != '\0') {
            candidates.push_back(env);
        }
        candidates.push_back(CUGRADE_NVCC);
        candidates.push_back("nvcc");
    }
    for (const auto& nvcc : candidates) {
        try {
            const ProcessResult version = run_tool({nvcc, "--version"}, {}, tool_seconds);
            if (!version.status.success()) {
                continue;
            }
            Toolchain toolchain;
            toolchain.nvcc = nvcc;
            std::istringstream lines(version.output);
            for (std::string line; std::getline(lines, line);) {
                if (!line.empty()) {
                    toolchain.nvcc_version = line;
                }
            }
            toolchain.compute_sanitizer = find_beside(nvcc, "compute-sanitizer");
            toolchain.cupti_dir = find_cupti(nvcc);
            for (const char* dir : {CUGRADE_JSON_INCLUDE_DIR}) {
                const fs::path path = dir;
                // The system folders are searched anyway; naming them with -I reorders them and breaks libstdc++.
                if (!path.empty() && path != "/usr/include" && path != "/usr/local/include") {
                    toolchain.include_dirs.push_back(path);
                }
            }
            return toolchain;
        } catch (const std::runtime_error&) {
            continue;
        }
    }
    throw UsageError(fmt::format("cannot run nvcc (tried {}); install the CUDA toolkit or name it with --nvcc",
                                 fmt::join(candidates, ", ")));
}

BuildResult build_submission(const Exercise& exercise, const fs::path& submission, const Toolchain& toolchain,
                             const BuildOptions& options) {
    CacheKey harness_key;
    const fs::path harness = build_harness(exercise, toolchain, options, harness_key);
    const fs::path program_symbols = harness.parent_path() / "program-symbols.txt";

    CacheKey key;
    key.add("harness", harness_key.text()).add("submission", read_file(submission));
    CacheEntry entry(options.cache_dir, "submission-" + exercise.name, key);
    BuildResult result;
    result.work_dir = entry.temporary() ? entry.path() : fs::path{};
    const auto record_paths = [&](const fs::path& folder) {
        result.source = folder / exercise.submission_file;
        result.object = folder / "submission.o";
        result.program_symbols = program_symbols;
    };
    if (entry.hit()) {
        result.cached = true;
        record_paths(entry.path());
        result.program = entry.path() / "program";
        result.ok = fs::is_regular_file(result.program);
        result.diagnostics = read_file(entry.path() / "diagnostics.txt");
        if (!result.ok) {
            result.step = read_file(entry.path() / "step.txt");
        }
        return result;
    }

    const fs::path dir = entry.start();
    // The submission is compiled as a copy in a folder of its own: it sees its contract and nothing else of the
    // student's folder, and a cached build can only depend on what the key holds.
    fs::copy_file(submission, dir / exercise.submission_file);
    std::vector<std::string> compile = {toolchain.nvcc};
    for (const auto& flag : nvcc_flags(options.arch)) {
        compile.push_back(flag);
    }
    compile.insert(compile.end(), {"-I" + exercise.directory.string(), "-include", exercise.contract_header.string(),
                                   "-c", exercise.submission_file, "-o", "submission.o"});
    const auto shown = submission.string();
    const auto record_failure = [&](const std::string& step, const ProcessResult& process) {
        result.step = step;
        result.diagnostics = present_diagnostics(process.output, exercise.submission_file, shown);
        if (process.status.timed_out) {
            result.diagnostics += fmt::format("\n{} took longer than {} seconds and was stopped\n", step,
                                              options.compile_seconds);
        }
        write_file(dir / "step.txt", result.step);
        write_file(dir / "diagnostics.txt", result.diagnostics);
        entry.commit();
    };

    // The student's code is compiled and linked in the sandbox too: an #include of a path outside the exercise
    // would otherwise read the reference or another submission into the build.
    SandboxPolicy sandbox = options.sandbox;
    sandbox.readable.push_back(exercise.directory);
    sandbox.readable.push_back(harness.parent_path());
    const ProcessResult compiled = run_tool(compile, dir, options.compile_seconds, sandbox);
    if (!compiled.status.success()) {
        record_failure("compile", compiled);
        return result;
    }
    // The harness comes first, so its definitions win wherever the linker picks one of several (inline functions).
    ProcessResult linked =
        run_tool(link_command(toolchain, options, {harness.string(), "submission.o"}, "program"), dir,
                 options.compile_seconds, sandbox);
    if (!linked.status.success()) {
        for (const auto& entry_point : exercise.entry_points) {
            if (linked.output.find(fmt::format("undefined reference to `{}'", entry_point)) != std::string::npos) {
                linked.output += fmt::format("hint: {} must define {}() exactly as {} declares it\n",
                                             exercise.submission_file, entry_point,
                                             exercise.contract_header.filename().string());
            }
        }
        record_failure("link", linked);
        return result;
    }
    result.diagnostics = present_diagnostics(compiled.output, exercise.submission_file, shown);  // warnings
    write_file(dir / "diagnostics.txt", result.diagnostics);
    entry.commit();
    result.ok = true;
    record_paths(entry.path());
    result.program = entry.path() / "program";
    return result;
}

}  // namespace cugrade
