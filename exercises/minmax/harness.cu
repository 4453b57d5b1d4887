// The min/max harness: seeded input (with planted extremes and infinities), its extremes found on the GPU, the
// submission's calls, an exact check.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "device_reduce.cuh"
#include "harness.cuh"
#include "left_out.hpp"
#include "minmax.h"

CUGRADE_REFERENCE(minmax);

namespace {

using namespace cugrade::harness;
namespace canary = cugrade::canary;

struct Extremes {
    float min = INFINITY;
    float max = -INFINITY;
};

struct AsExtremes {
    __host__ __device__ Extremes operator()(float x) const { return {x, x}; }
};
struct CombineExtremes {
    __host__ __device__ Extremes operator()(const Extremes& a, const Extremes& b) const {
        return {fminf(a.min, b.min), fmaxf(a.max, b.max)};
    }
};

// What is wrong with one of the two results.
std::string check_one(const char* which, float obtained, float expected) {
    if (obtained == expected) {  // exact; -0.0 == +0.0
        return "";
    }
    std::ostringstream detail;
    detail << which << " expected " << describe_number(expected) << ", got " << describe_number(obtained)
           << (is_poison(obtained) ? " (never written)" : "");
    return detail.str();
}

std::string check_minmax(const std::vector<float>& output, const Extremes& e, std::size_t n) {
    const std::string min_problem = check_one("min", output[0], e.min);
    const std::string max_problem = check_one("max", output[1], e.max);
    if (min_problem.empty() && max_problem.empty()) {
        return "";
    }
    return "n=" + std::to_string(n) + ": " + min_problem + (min_problem.empty() || max_problem.empty() ? "" : "; ") +
           max_problem;
}

// The mistakes students make most: the two results swapped, a running extreme that starts at a value no element
// holds (0 rather than +INFINITY for the minimum), and the last elements left out (the extremes of the others).
std::optional<Explanation> explain_minmax(const std::vector<float>& output, const Extremes& e, const float* input,
                                          std::size_t n) {
    Explanation explanation;
    if (e.min != e.max && output[0] == e.max && output[1] == e.min) {
        explanation.summary = "the minimum and the maximum are swapped";
        explanation.category = explanation.summary;
        explanation.hint = "output[0] holds the minimum and output[1] the maximum: check the order of the writes, "
                           "and which of fminf and fmaxf goes where";
        explanation.evidence.push_back("output[0] is " + describe_number(output[0]) + ", the maximum; output[1] is " +
                                       describe_number(output[1]) + ", the minimum");
        return explanation;
    }
    // Two declarations: in one, clang-format reads `output[0] < e.min, ... output[1] > e.max` as a template's brackets.
    const bool min_outside = output[0] < e.min;
    const bool max_outside = output[1] > e.max;
    if (!is_poison(output[0]) && !is_poison(output[1]) && (min_outside || max_outside)) {
        const char* which = min_outside ? "minimum" : "maximum";
        const float value = min_outside ? output[0] : output[1];
        // 0 is the mark of a running extreme started at 0, but not its proof: a shuffle that reads a lane which does
        // not exist (a last, partial warp) or is not in its mask reads 0 as well. Any other value no element holds
        // may come from shared memory read before it was written. Say what was seen, and each cause it may have.
        explanation.summary =
            std::string("the ") + which + " is " + (value == 0.0f ? "0, " : "a value ") + "which no element holds";
        if (value == 0.0f) {
            explanation.category = "0 where no element is 0";
            explanation.hint = std::string("0 comes from a running extreme that starts at 0 rather than at the "
                                           "identity (start the minimum at +INFINITY and the maximum at -INFINITY, "
                                           "never at 0), or from a __shfl_*_sync that reads a lane which does not "
                                           "exist (a block size that is not a multiple of 32 leaves a last, partial "
                                           "warp) or is not in its mask");
            explanation.topic = "inputs";
        } else {
            explanation.hint = "such a value comes from memory no element was written to: a slot of shared memory "
                               "read before a thread wrote it (a missing __syncthreads(), threads or warps left out "
                               "of the tree), or a running extreme that does not start at the identity of min or "
                               "max (+INFINITY for the minimum)";
        }
        explanation.evidence.push_back(
            std::string("got ") + describe_number(value) + " for the " + which +
            (e.min > e.max
                 ? std::string(" of no elements, which is ") + describe_number(min_outside ? e.min : e.max)
                 : ", but every element lies between " + describe_number(e.min) + " and " + describe_number(e.max)));
        return explanation;
    }
    for (const std::size_t k : left_out_counts(n)) {
        const Extremes kept = reduce_on_device(input, n - k, AsExtremes{}, CombineExtremes{}, Extremes{});
        if (output[0] == kept.min && output[1] == kept.max) {
            explanation = left_out_explanation(k, n, "element", "elements");
            explanation.evidence.push_back("got the minimum and maximum of indices 0 to " + std::to_string(n - k - 1) +
                                           "; " + last_indices(k, n) + " hold" + (k == 1 ? "s" : "") + " " +
                                           (output[0] != e.min ? "the minimum, " + describe_number(e.min)
                                                               : "the maximum, " + describe_number(e.max)));
            return explanation;
        }
    }
    return std::nullopt;
}

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size();
    SeededInputs inputs(c, 1, canary::Mode::extremes);
    PerInputSet<Extremes> expected(
        inputs, [&](int set) { return reduce_on_device(inputs(set), n, AsExtremes{}, CombineExtremes{}, Extremes{}); });
    GuardedBuffer output("output", 2);
    GuardedBuffer scratch("scratch", MINMAX_SCRATCH_FLOATS);

    CaseCalls<decltype(minmax)> calls(cugrade_reference_minmax, inputs, {"input"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set), n, output.get(), scratch.get(), stream);
    };
    calls.check = [&](int set) { return check_minmax(output.to_host(), expected[set], n); };
    calls.explain = [&](int set) { return explain_minmax(output.to_host(), expected[set], inputs(set), n); };
    calls.outputs = {&output, &scratch};
    calls.bytes = static_cast<double>(n) * sizeof(float);
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
