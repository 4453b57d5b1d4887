// The part of every exercise's harness that is not about the exercise. An exercise's harness.cu declares its
// reference (CUGRADE_REFERENCE), supplies `CaseOutcome run_case(const plan::Case&)` built on run_calls
// (case_calls.cuh), and ends with CUGRADE_HARNESS_MAIN(run_case). Its parts, each a file of its own:
//   cuda_check.cuh      CUDA calls checked with file:line; device buffers
//   seeded_input.cuh    a case's inputs, drawn on the GPU from their seeds
//   guarded_buffer.cuh  poison, guard regions and input snapshots
//   case_calls.cuh      the calls of one case, their checks and the speed test
//   case_outcome.hpp    what a case reports, in plain values
//   channel.hpp         the result channel and the batch's shared GPU
//   describe.hpp        numbers as reports show them
//   plan_loop.cpp       the plan read, the checker locked down, the case loop and its JSON records
// Nothing an exercise's CUDA translation unit includes parses nlohmann/json.hpp: cudafe++, cicc and the host
// compiler would each parse it, a third of the harness's compile. The JSON is written in host-only objects
// (plan_loop.cpp, channel.cpp, remote_submission.cpp) linked beside it.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "case_calls.cuh"
#include "case_outcome.hpp"
#include "case_plan.hpp"
#include "channel.hpp"
#include "cuda_check.cuh"
#include "describe.hpp"
#include "guarded_buffer.cuh"
#include "protocol.hpp"
#include "remote_submission.hpp"
#include "seeded_input.cuh"

namespace cugrade::harness {

using plan::Case;

// The case loop (plan_loop.cpp): reads the plan named on the command line, runs each case with `run_case` (CUDA
// failures propagate as CudaFailure) and reports it, then ends without running exit handlers, so that nothing the
// submission registered (destructors of its globals, atexit) runs after its last case. Under compute-sanitizer,
// whose report comes from the exit handlers, it returns as usual.
int run_harness(int argc, char** argv, const std::function<CaseOutcome(const plan::Case&)>& run_case);

}  // namespace cugrade::harness

// The instructor's reference of entry point NAME, linked into the checker under its own name and made local by the
// grader, so that the submission cannot call it. The submission is never linked into the checker, on the GPU or on
// the CPU (docs/cpu-mode.md): its runner is a process of its own.
#define CUGRADE_REFERENCE(NAME) extern "C" decltype(NAME) cugrade_reference_##NAME

// The harness's main(): the exercise's `CaseOutcome run_case(const cugrade::plan::Case&)` over the plan.
#define CUGRADE_HARNESS_MAIN(RUN_CASE) \
    int main(int argc, char** argv) { return ::cugrade::harness::run_harness(argc, argv, RUN_CASE); }
