// Building a submission: the student's file with nvcc, linked with the exercise's harness and the reference (made
// local, so the submission cannot call it). Both stages are cached by content.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cugrade/exercise.hpp"
#include "cugrade/sandbox.hpp"

namespace cugrade {

struct Toolchain {
    std::string nvcc = "nvcc";
    std::string nvcc_version;  // the last line of `nvcc --version`, part of every cache key
    std::string ld = "ld";
    std::string nm = "nm";
    std::string objcopy = "objcopy";
    std::string readelf = "readelf";
    std::string objdump = "objdump";
    std::string compute_sanitizer;  // beside nvcc or on PATH; empty when neither has it
    std::vector<std::filesystem::path> include_dirs;  // headers the harness needs (nlohmann-json)
    std::filesystem::path cupti_dir;  // libcupti, for the harness's traffic monitor; empty when not found
};

// Finds nvcc: `preferred` when given, else $CUGRADE_NVCC, else the one cugrade was built with, else PATH.
// Throws UsageError when none runs.
Toolchain find_toolchain(const std::optional<std::string>& preferred);

struct BuildOptions {
    std::string arch;                    // "sm_90"
    std::filesystem::path cache_dir;     // empty: build in a temporary folder and discard it
    double compile_seconds = 300.0;
    SandboxPolicy sandbox;               // for compiling and linking the submission; work_dir is set per build
};

struct BuildResult {
    bool ok = false;
    bool cached = false;
    std::filesystem::path program;       // the linked harness, when ok
    std::filesystem::path object;        // the submission compiled alone, when it compiled
    std::filesystem::path source;        // the copy of the submission that was compiled
    std::filesystem::path program_symbols;  // the names the program has without the submission (inspect.hpp)
    std::string step;                    // what failed: "compile" or "link"
    std::string diagnostics;             // the compiler's messages, paths shown as the user gave them
    std::filesystem::path work_dir;      // the temporary folder to remove (no cache), or empty
};

// Builds the submission. A failure of the submission is a BuildResult with ok = false; a failure of the course's own
// files (harness or reference) throws UsageError, since no submission can be graded then.
BuildResult build_submission(const Exercise& exercise, const std::filesystem::path& submission,
                             const Toolchain& toolchain, const BuildOptions& options);

// The cache folder cugrade uses by default: $CUGRADE_CACHE_DIR, $XDG_CACHE_HOME/cugrade or ~/.cache/cugrade.
std::filesystem::path default_cache_dir();

}  // namespace cugrade
