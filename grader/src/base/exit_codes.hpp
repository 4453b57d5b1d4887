// The exit codes of `cugrade`, documented in README.md and docs/cli.md.
#pragma once

namespace cugrade {

enum class ExitCode : int {
    passed = 0,          // every case of every exercise passed
    failed = 1,          // some case failed (a build error fails every case)
    invalid = 2,         // bad usage, rubric or exercise description: nothing was graded
    internal_error = 3,  // cugrade or its environment failed (not the submission's fault)
    skipped = 77,        // the submission built, but no NVIDIA GPU is visible to run it (CTest's usual skip code)
};

constexpr int to_int(ExitCode code) { return static_cast<int>(code); }

}  // namespace cugrade
