// What the harness calls a submission's entry point through: its runner (remote_submission.hpp), on the GPU or, for
// the CPU self-check, on the CPU (cpu/runner.hpp).
#pragma once

#include <functional>
#include <stdexcept>

namespace cugrade::harness {

// The runner went away during a call: the grader reads why from its exit status.
struct RunnerGone : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <class Signature>
using Entry = std::function<Signature>;

}  // namespace cugrade::harness
