// What the harness calls a submission's entry point through, wherever the submission runs: in its runner
// (remote_submission.cuh) or, on the CPU, in the harness's own process (cpu/direct_submission.hpp).
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
