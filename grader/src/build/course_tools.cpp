#include "build/course_tools.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace cugrade {
namespace fs = std::filesystem;

std::vector<std::string> nvcc_common_flags() { return {"-std=c++20", "-O3", "-lineinfo"}; }

ProcessResult run_tool(std::vector<std::string> argv, const fs::path& cwd, double seconds, const SandboxPolicy& sandbox,
                       std::vector<std::pair<std::string, std::string>> environment) {
    ProcessOptions options;
    options.argv = std::move(argv);
    options.working_directory = cwd;
    options.sandbox = sandbox;
    options.environment = std::move(environment);
    options.output_limit = std::size_t{1} << 20;
    if (options.sandbox.enabled) {
        options.sandbox.work_dir = cwd;
    }
    return run_process(options, std::chrono::duration<double>(seconds));
}

std::string command_failure(const ProcessResult& result, const std::string& what) {
    return fmt::format("{} {}:\n{}", what, result.status.describe(), result.output);
}

void run_course_tool(std::vector<std::string> argv, const fs::path& cwd, const std::string& what) {
    // A kit's harness compiles for a dozen architectures: minutes.
    const ProcessResult result = run_tool(std::move(argv), cwd, course_tool_seconds * 30);
    if (!result.status.success()) {
        throw UsageError(command_failure(result, what));
    }
}

std::future<void> compile_course_file(std::vector<std::string> compile, const fs::path& source,
                                      const std::string& object, const fs::path& cwd, std::string what) {
    compile.insert(compile.end(), {"-c", source.string(), "-o", object});
    return std::async(std::launch::async, [compile = std::move(compile), cwd, what = std::move(what)] {
        run_course_tool(compile, cwd, what);
    });
}

std::string tool_output(std::vector<std::string> argv, const fs::path& cwd, const std::string& what) {
    ProcessOptions options;
    options.argv = std::move(argv);
    options.working_directory = cwd;
    options.output_limit = std::size_t{256} << 20;
    const ProcessResult result = run_process(options, std::chrono::duration<double>(course_tool_seconds));
    if (!result.status.success()) {
        throw UsageError(command_failure(result, what));
    }
    return result.output;
}

}  // namespace cugrade
