// The min/max harness: seeded input (with planted extremes and infinities), its extremes found on the GPU, the
// submission's calls, an exact check.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "device_reduce.cuh"
#include "harness.cuh"
#include "minmax.h"

CUGRADE_REFERENCE(minmax);

namespace {

using namespace cugrade::harness;

struct Extremes {
    float min = INFINITY;
    float max = -INFINITY;
    bool has_zero = false;
};

struct AsExtremes {
    __host__ __device__ Extremes operator()(float x) const { return {x, x, x == 0.0f}; }
};
struct CombineExtremes {
    __host__ __device__ Extremes operator()(const Extremes& a, const Extremes& b) const {
        return {fminf(a.min, b.min), fmaxf(a.max, b.max), a.has_zero || b.has_zero};
    }
};

// What is wrong with one of the two results, with a hint for the mistakes students make most.
std::string check_one(const char* which, float obtained, float expected, const Extremes& e) {
    if (obtained == expected) {  // exact; -0.0 == +0.0
        return "";
    }
    std::ostringstream detail;
    detail << which << " expected " << describe_number(expected) << ", got " << describe_number(obtained);
    if (is_poison(obtained)) {
        detail << " (never written)";
    } else if (obtained == 0.0f && !e.has_zero) {
        detail << " (0 is not in the input: did the running " << which << " start at 0 instead of "
               << (std::string(which) == "min" ? "+INFINITY" : "-INFINITY") << "?)";
    }
    return detail.str();
}

std::string check_minmax(const std::vector<float>& output, const Extremes& e, std::size_t n) {
    if (e.min != e.max && output[0] == e.max && output[1] == e.min) {
        return "n=" + std::to_string(n) + ": min and max are swapped (output[0] must hold the minimum)";
    }
    const std::string min_problem = check_one("min", output[0], e.min, e);
    const std::string max_problem = check_one("max", output[1], e.max, e);
    if (min_problem.empty() && max_problem.empty()) {
        return "";
    }
    return "n=" + std::to_string(n) + ": " + min_problem + (min_problem.empty() || max_problem.empty() ? "" : "; ") +
           max_problem;
}

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size();
    const SeededInputs inputs(c, 1);
    std::vector<Extremes> expected;
    {
        SharedGpu gpu;
        for (int set = 0; set < inputs.sets(); ++set) {
            expected.push_back(reduce_on_device(inputs(set), n, AsExtremes{}, CombineExtremes{}, Extremes{}));
        }
    }
    GuardedBuffer output("output", 2);
    GuardedBuffer scratch("scratch", MINMAX_SCRATCH_FLOATS);

    CaseCalls<decltype(minmax)> calls(cugrade_reference_minmax, inputs, {"input"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set), n, output.get(), scratch.get(), stream);
    };
    calls.check = [&](int set) { return check_minmax(output.to_host(), expected[set], n); };
    calls.outputs = {&output, &scratch};
    calls.bytes = static_cast<double>(n) * sizeof(float);
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
