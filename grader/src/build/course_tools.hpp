// Running the toolchain on the course's own files (harness, reference, runner): a failure there is the course's or
// the machine's, never a submission's, so it throws.
#pragma once

#include <filesystem>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/process.hpp"
#include "sandbox/sandbox.hpp"

namespace cugrade {

inline constexpr double course_tool_seconds = 60.0;

// The flags every CUDA compile of cugrade's shares, before the architecture's.
std::vector<std::string> nvcc_common_flags();

ProcessResult run_tool(std::vector<std::string> argv, const std::filesystem::path& cwd, double seconds,
                       const SandboxPolicy& sandbox = {},
                       std::vector<std::pair<std::string, std::string>> environment = {});

// "WHAT exited with code 1:\nOUTPUT"
std::string command_failure(const ProcessResult& result, const std::string& what);

// Runs a tool on course files; throws UsageError with `what`, how it ended and what it printed when it fails.
void run_course_tool(std::vector<std::string> argv, const std::filesystem::path& cwd, const std::string& what);

// `compile` (a course compile command) run on `source` into `object` in `cwd`, in a thread of its own: the future
// throws as run_course_tool does. Its destructor waits for the compile, however the caller's other steps end.
std::future<void> compile_course_file(std::vector<std::string> compile, const std::filesystem::path& source,
                                      const std::string& object, const std::filesystem::path& cwd, std::string what);

// The same, returning what the tool printed.
std::string tool_output(std::vector<std::string> argv, const std::filesystem::path& cwd, const std::string& what);

}  // namespace cugrade
