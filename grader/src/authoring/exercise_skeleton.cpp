// The files of a new exercise, as `cugrade new` writes them: a whole exercise that builds and grades at once (an
// element-wise doubling of a vector), with TODO(instructor) wherever the instructor makes it their own. @name@ is
// replaced by the exercise's name, @NAME@ by the same in capitals and @Title@ by its title.
#include "authoring/exercise_skeleton.hpp"

namespace cugrade {

namespace {

constexpr const char* exercise_yaml =
    R"~(# What the grader needs to know about the @name@ exercise. The grading policy lives in rubrics/@name@.yaml.
# docs/authoring.md walks through every file of an exercise.
title: @Title@
submission: @name@.cu    # the file a student writes; the instructor's version is reference/@name@.cu
contract: @name@.h       # the header that declares the entry points
entry_points: [@name@]   # extern "C" functions the submission defines
operands: [input]        # one seeded input buffer per operand, each drawn with a seed of its own
# TODO(instructor): the parameters a rubric may set per group, if the exercise has any: each one's type (integer,
# float32 or boolean), default and the range its harness accepts, checked when a rubric loads; the harness reads
# c.parameter(NAME). See docs/authoring.md:
# parameters:
#   bins: {type: integer, default: 256, min: 1, max: 4096, reason: "one copy of the counts fits in shared memory"}
#   low: {type: float32, default: 0}
#   high: {type: float32, default: 1, greater_than: low}
#   exclusive: {type: boolean, default: false}
# TODO(instructor): library baselines that `cugrade bench` times the reference against, each a file of
# exercises/@name@/baselines/ that implements the contract with the library (see exercises/sum/baselines/cub.cu):
# baselines:
#   cub: {source: baselines/cub.cu}
# What the contract (@name@.h) says of the submission's code, checked in its compiled code (docs/authoring.md):
# TODO(instructor): the arithmetic it refuses (fp64, float_mma, integer_mma, packed_half), the libraries it allows,
# whether host copies are refused, each in the contract's own words.
rules:
  arithmetic:
    refuse: [fp64, float_mma, integer_mma, packed_half]
    words: "Compute in float32 only (no double, TF32 or half precision)"
  libraries:
    allow: []
    words: "call libraries that compute it for you"
  host_copies:
    refuse: true
    words: "copy to the host"
# Where README.md teaches the fix of each kind of diagnosis: a diagnosis's hint ends at the section its topic names.
readme_sections:
  bounds: The bounds check
  grid: The bounds check
  barrier: Speed
  vector_loads: Speed
)~";

constexpr const char* contract_h = R"~(// @Title@: the contract between your @name@.cu and the grader.
//
// TODO(instructor): the contract as students read it. The skeleton's exercise doubles a vector.
//
// Write `@name@` in @name@.cu. The grader's harness calls it from the host with pointers to device memory:
//
//   input    n float32 values. Never write them.
//   n        the number of values, 0 or more.
//   output   n float32 values: output[i] must be 2 * input[i], exactly. It is filled with NaN before every call, and
//            so is the memory after it: write every element of output and nothing past it.
//   stream   launch every kernel on this stream. The harness waits for the whole device after your call returns.
//
// The grader calls `@name@` several times in one process. Do not allocate memory, synchronise, copy to the host, or
// call libraries that compute it for you. Compute in float32 only (no double, TF32 or half precision).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

extern "C" void @name@(const float* input, std::size_t n, float* output, cudaStream_t stream);
)~";

constexpr const char* harness_cu =
    R"~(// The @name@ harness: seeded input, an exact check of every element of the output on the GPU, and the submission
// called and timed by the shared machinery (exercises/common/harness.cuh). docs/authoring.md says what each part is for.
//
// TODO(instructor): the exercise's own check. What must hold of the output, computed here rather than taken from the
// reference's code, so that a bug the reference shares with a submission cannot hide.
#include <sstream>
#include <string>

#include "harness.cuh"
#include "mismatch_count.cuh"
#include "@name@.h"

CUGRADE_REFERENCE(@name@);

namespace {

using namespace cugrade::harness;

// TODO(instructor): what output[i] must be.
__device__ float expected_element(const float* input, std::size_t i) { return 2.0f * input[i]; }

// Element i is wrong unless it has the bits of the expected value: counted on the GPU (mismatch_count.cuh).
struct ElementIsWrong {
    const float* input;
    const float* output;
    __device__ bool operator()(std::size_t i) const {
        return __float_as_uint(output[i]) != __float_as_uint(expected_element(input, i));
    }
};

// "n=1025: 1 of 1025 elements wrong; the first is output[1024]: expected 1.5, got nan (never written)", or "".
std::string check_output(const float* input, const float* output, std::size_t n) {
    if (n == 0) {
        return "";
    }
    const Mismatches found = count_mismatches(n, ElementIsWrong{input, output});
    if (found.wrong == 0) {
        return "";
    }
    const std::size_t first = found.first_wrong;
    const float x = read_element(input + first), obtained = read_element(output + first);
    std::ostringstream detail;
    detail << "n=" << n << ": " << found.wrong << " of " << n << " elements wrong; the first is output[" << first
           << "]: expected " << describe_number(2.0f * x) << ", got " << describe_number(obtained)
           << (is_poison(obtained) ? " (never written)" : "");
    return detail.str();
}

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size();
    SeededInputs inputs(c, 1);
    // Poisoned before every call, with a guard region after it that catches a write past its end.
    GuardedBuffer output("output", n, 4096, "check i < n before the write");

    CaseCalls<decltype(@name@)> calls(cugrade_reference_@name@, inputs, {"input"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set), n, output.get(), stream);
    };
    calls.check = [&](int set) { return check_output(inputs(set), output.get(), n); };
    // TODO(instructor): calls.explain, what a wrong answer is when the numbers prove it (the last elements left
    // out, a partial block never written: exercises/common/left_out.hpp, explanation.hpp).
    calls.outputs = {&output};
    calls.bytes = 2.0 * static_cast<double>(n) * sizeof(float);  // TODO(instructor): the bytes it must move at least
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
)~";

constexpr const char* reference_cu = R"~(// Reference @name@: a grid-stride loop sized to the GPU.
//
// TODO(instructor): the solution the submissions are timed against. Make it as fast as you can: the speed tiers are
// ratios to its time.
#include <algorithm>

#include "@name@.h"

namespace {

__global__ void double_elements(const float* __restrict__ input, std::size_t n, float* __restrict__ output) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        output[i] = 2.0f * input[i];
    }
}

}  // namespace

void @name@(const float* input, std::size_t n, float* output, cudaStream_t stream) {
    constexpr unsigned threads = 256;
    const auto blocks = static_cast<unsigned>(std::clamp<std::size_t>((n + threads - 1) / threads, 1, 8192));
    double_elements<<<blocks, threads, 0, stream>>>(input, n, output);
}
)~";

constexpr const char* template_cu = R"~(// @Title@. Read exercises/@name@/README.md first; the contract is in @name@.h.
//
// This file compiles and runs, but it computes nothing yet: the grader will report "never written".
// Fill in the kernel and the launch configuration where it says TODO.
#include "@name@.h"

__global__ void double_elements(const float* input, std::size_t n, float* output) {
    // TODO: i from blockIdx.x, blockDim.x and threadIdx.x (in std::size_t); threads past n do nothing.
    // TODO: output[i] = 2 * input[i].
    (void)input;
    (void)n;
    (void)output;
}

void @name@(const float* input, std::size_t n, float* output, cudaStream_t stream) {
    // TODO: enough blocks of 256 threads to cover n: (n + 255) / 256, at least 1.
    double_elements<<<1, 256, 0, stream>>>(input, n, output);
}
)~";

constexpr const char* rubric_yaml =
    R"~(# Grading policy for the @name@ exercise. Every key is described in docs/rubric.md; docs/authoring.md says how to
# choose the cases and place the tiers.
schema: 1
exercise: @name@

limits:
  compile_seconds: 300     # nvcc, for the compile and for the link
  case_seconds: 10         # wall clock of one case, from its start to its result

calls_per_case: 3          # each case calls @name@() this often in one process; every call must be right

inputs:
  integers: {kind: integers, low: -3, high: 3}
  signed:   {kind: uniform, low: -1, high: 1}

groups:
  - name: edges            # TODO(instructor): the sizes where students' mistakes show: 0, one element, block edges
    visibility: visible
    points: 30
    sizes: [0, 1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025]
    inputs: [integers, signed]
    seed: 1
  - name: medium
    visibility: visible
    points: 20
    sizes: [65535, 65536, 65537]
    inputs: [signed]
    seed: 2
  - name: large            # hidden: students see that it exists and its points, never its sizes or details
    # TODO(instructor): sizes of your own: these are in cugrade's sources, which every student kit holds, and
    # `cugrade handout` refuses a kit that shows a hidden size.
    visibility: hidden
    points: 10
    sizes: [5000011, 268435456]
    inputs: [signed]
    seed: 3
    case_seconds: 30
  - name: races            # small cases once more under compute-sanitizer: racecheck, and memcheck for stray accesses
    visibility: visible
    points: 10
    sizes: [1025, 4099]
    inputs: [integers]
    seed: 5
    race_check: true
    memory_check: true
    case_seconds: 20

speed:
  size: 268435456
  input: signed
  seed: 4
  visibility: visible
  warmup: 3
  min_samples: 10          # then sampling goes on until both medians are known to 0.5% (docs/rubric.md)
  max_samples: 200
  target_rse: 0.005
  max_seconds: 20
  case_seconds: 90
  tiers:                   # the submission's median time over the reference's, measured in the same run
    # TODO(instructor): place the tiers from `cugrade check` of the classroom solutions (docs/authoring.md, "Tiers").
    - {max_ratio: 1.15, points: 30}
    - {max_ratio: 2, points: 15}
    - {max_ratio: 10, points: 5}
)~";

constexpr const char* readme_md = R"~(# @Title@

TODO(instructor): what the exercise teaches, and what to read first.

## What to write

`@name@` in `@name@.cu` (start from `student_template/@name@.cu`); the contract is in `exercises/@name@/@name@.h`.
Check your work with `cugrade check` in the folder that holds your `@name@.cu`.

## The bounds check

The last block sticks out past `n` when `n` is not a multiple of the block size: its threads past the end must do
nothing. The grader tries sizes around every block edge, and once under compute-sanitizer, which reports any access
outside the arrays.

## Speed

TODO(instructor): what makes the fast solutions fast, and which tier the classroom solution reaches.
)~";

constexpr const char* reference_expected =
    R"~(# The instructor's reference (reference/@name@.cu), graded as a submission.
build: ok
status: passed
cases:
  - {match: "speed/*", status: [passed, slow]}
)~";

constexpr const char* template_expected =
    R"~(# The student template (student_template/@name@.cu) builds, writes nothing, and so fails every case but n=0,
# where there is nothing to write.
build: ok
status: wrong_answer
cases:
  - {match: "*/n=0/*", status: passed}
)~";

constexpr const char* fixtures_readme = R"~(# Fixtures of the @name@ exercise

One folder per submission the grader must judge right: `NAME/@name@.cu` and `NAME/expected.yaml`, the verdicts it
must get (tests/fixture_check.cpp says what the file may hold). Each becomes the test `fixture.@name@.NAME`. Add the
classroom solutions, the mistakes students make most, and a submission for each diagnosis the harness gives.
)~";

}  // namespace

std::vector<SkeletonFile> exercise_skeleton() {
    return {
        {"exercises/@name@/exercise.yaml", exercise_yaml},
        {"exercises/@name@/@name@.h", contract_h},
        {"exercises/@name@/harness.cu", harness_cu},
        {"exercises/@name@/README.md", readme_md},
        {"reference/@name@.cu", reference_cu},
        {"student_template/@name@.cu", template_cu},
        {"rubrics/@name@.yaml", rubric_yaml},
        {"tests/fixtures/@name@-reference.expected.yaml", reference_expected},
        {"tests/fixtures/@name@-template.expected.yaml", template_expected},
        {"tests/fixtures/@name@/README.md", fixtures_readme},
    };
}

}  // namespace cugrade
