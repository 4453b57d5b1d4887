// The harness stage of a build (docs/architecture.md, "A build"): the exercise's checker, built from its harness and
// the instructor's reference, and the runner's half that a submission's object completes, cached once per course
// revision, toolchain and GPU architecture.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "build/cache.hpp"
#include "build/build.hpp"
#include "course/exercise.hpp"
#include "build/toolchain.hpp"
#include "base/scratch_dir.hpp"

namespace cugrade {

// The harness stage's folder: checker, runner.o and program-symbols.txt (the names inspect.hpp checks a submission's
// process against). `temporary` holds it while it lives where it is not cached.
struct HarnessBuild {
    std::filesystem::path dir;
    std::shared_ptr<ScratchDir> temporary;
};

// The harness stage for `exercise`, from the cache when `key` (the stage's inputs, added here) finds it. Throws
// UsageError when a course file does not compile or link.
HarnessBuild build_harness(const Exercise& exercise, const Toolchain& toolchain, const BuildOptions& options,
                           CacheKey& key);

// The submission's process: its object after the runner's loop and the capture runtime, without libcudart.
std::vector<std::string> runner_link_command(const Toolchain& toolchain, const BuildOptions& options,
                                             const std::string& submission_object, const std::string& output);

}  // namespace cugrade
