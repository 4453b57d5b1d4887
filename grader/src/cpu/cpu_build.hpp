// The CPU self-check's build (docs/cpu-mode.md): the exercise's harness, its reference and the submission compiled
// for the CPU with the system's C++ compiler, over the CUDA of exercises/common/cpu, into two programs, as on the
// GPU: the checker (the harness, the reference, the result channel), which speaks the harness protocol
// (protocol.hpp) like the GPU's, and the runner (the submission alone with the CPU runtime, cpu/runner.hpp). Neither
// holds anything of the other's.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "course/exercise.hpp"
#include "sandbox/sandbox.hpp"
#include "course/submission.hpp"
#include "build/toolchain.hpp"

namespace cugrade {

struct CpuBuildOptions {
    std::filesystem::path work_dir;   // where the staged sources, the submission's object and the program go
    std::filesystem::path cache_dir;  // the course's objects, built once per revision; empty: none kept
    double compile_seconds = 300.0;
    // For compiling and linking the submission, as the GPU build's: it sees the staged sources and the system's
    // headers and libraries, nothing else.
    SandboxPolicy sandbox;
    // objcopy and readelf, which prepare the submission's object for its link (link_object.hpp).
    Toolchain toolchain;
};

struct CpuBuildResult {
    bool ok = false;
    std::string step;               // what failed of the submission's: "rewrite", "compile" or "link"
    std::string diagnostics;        // the compiler's words, for the student
    std::filesystem::path checker;  // the harness, the reference and the CPU runtime: no code of the submission's
    std::filesystem::path runner;   // the submission and the CPU runtime: no code of the harness's or reference's
};

// The C++ compiler the self-check uses: $CXX, else c++.
std::string cpu_compiler();

// The machine the self-check's objects are built for, from `c++ -dumpmachine`: "x86_64-linux"; "" without a compiler.
std::string cpu_target();

// A kit's part of the self-check (`cugrade handout`): the exercise's harness, reference, the runner's loop and the
// CPU runtime compiled into `folder` (cpu_course_object_files), staged under `work`. A kit's exercise names the
// folder as Exercise::prebuilt_cpu_objects, and build_for_cpu links them instead of compiling its own.
void build_cpu_kit_objects(const Exercise& exercise, const std::filesystem::path& work,
                           const std::filesystem::path& folder);

// Why this machine cannot build the self-check (no C++ compiler, no Boost.Context), with what to install; nothing
// when it can.
std::optional<std::string> cpu_self_check_missing();

// Builds the self-check's two programs. Throws UsageError when the course's own part does not build (a missing
// Boost.Context says so), since that is no fault of the submission's.
CpuBuildResult build_for_cpu(const Exercise& exercise, const SubmissionFile& submission,
                             const CpuBuildOptions& options);

}  // namespace cugrade
