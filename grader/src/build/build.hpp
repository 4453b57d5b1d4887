// Building a submission: the student's file with nvcc, linked with the exercise's harness and the reference (made
// local, so the submission cannot call it). Both stages are cached by content (docs/architecture.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "course/exercise.hpp"
#include "sandbox/sandbox.hpp"
#include "course/submission.hpp"
#include "build/toolchain.hpp"

namespace cugrade {

struct BuildOptions {
    std::string arch;                   // "sm_90"
    std::filesystem::path cache_dir;    // empty: build in a temporary folder and discard it
    std::uint64_t cache_max_bytes = 0;  // the cache's size limit (0: none)
    double compile_seconds = 300.0;
    // For compiling and linking the submission: its work_dir and readable paths are set per step, so that the
    // compiler sees the submission, its contract header, the toolkit and the system's headers, nothing else.
    SandboxPolicy sandbox;
    std::function<void(const std::string&)> progress;  // a line for people waiting, or empty
};

struct BuildResult {
    bool ok = false;
    bool cached = false;
    std::filesystem::path program;          // the checker (the exercise's harness), one for every submission, when ok
    std::filesystem::path object;           // the submission compiled alone, as nvcc made it, when it compiled
    std::filesystem::path dependencies;     // the headers its compile included (nvcc -MD), when it compiled
    std::filesystem::path program_symbols;  // the names the runner has without the submission (inspect.hpp)
    std::filesystem::path link_map;         // the linker's map of the runner, when ok
    std::filesystem::path runner;           // the submission's host code over the capture runtime, when ok
    std::filesystem::path device_code;      // the submission's fatbinary, for the checker to load, when ok
    // The submission's source without its comments (same_code.hpp), when ok: the same for two files that compile to
    // the same program; empty where it is not known.
    std::string same_code;
    std::string step;                 // what failed: "compile" or "link"
    std::string diagnostics;          // the compiler's messages, paths shown as the user gave them
    std::shared_ptr<void> temporary;  // the folders of a build without a cache, removed with the last copy
};

// Builds the submission. A failure of the submission is a BuildResult with ok = false. A failure of the course's
// own files (harness or reference) throws UsageError, since no submission can be graded then; a failure that is
// neither's (a full disk, a damaged tool) throws std::runtime_error, and nothing of it is cached.
BuildResult build_submission(const Exercise& exercise, const SubmissionFile& submission, const Toolchain& toolchain,
                             const BuildOptions& options);

// The cache folder cugrade uses by default: $CUGRADE_CACHE_DIR, $XDG_CACHE_HOME/cugrade or ~/.cache/cugrade.
std::filesystem::path default_cache_dir();

// The cache's size limit by default: $CUGRADE_CACHE_MIB mebibytes, else 5 GiB.
std::uint64_t default_cache_limit();

}  // namespace cugrade
