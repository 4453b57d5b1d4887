// The vector-sum harness: seeded input, its exact sum computed on the GPU, the submission's calls, one tolerance
// check.
#include <cmath>
#include <sstream>
#include <string>

#include "device_reduce.cuh"
#include "harness.cuh"
#include "sum.h"
#include "tolerance.hpp"
#include "total_check.cuh"

CUGRADE_REFERENCE(sum);

namespace {

using namespace cugrade::harness;
namespace canary = cugrade::canary;
namespace tol = cugrade::tolerance;

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size();
    SeededInputs inputs(c, 1, canary::Mode::total);
    PerInputSet<tol::SumReference> references(inputs, [&](int set) {
        return reduce_on_device(inputs(set), n, AsSumTerm{}, AddSumTerms{}, tol::SumReference{});
    });
    PerInputSet<double> tolerances(inputs,
                                   [&](int set) { return tol::summation_tolerance(n, references[set], c.lambda); });
    GuardedBuffer result("result", 1);
    GuardedBuffer scratch("scratch", SUM_SCRATCH_FLOATS);

    CaseCalls<decltype(sum)> calls(cugrade_reference_sum, inputs, {"input"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set), n, result.get(), scratch.get(), stream);
    };
    calls.check = [&](int set) { return check_total(read_element(result.get()), references[set], tolerances[set], n); };
    calls.explain = [&](int set) {
        const TotalTerms elements{"element", "elements", [&](std::size_t first, std::size_t count) {
                                      const std::vector<float> x = read_range(inputs(set), first, count);
                                      return std::vector<double>(x.begin(), x.end());
                                  }};
        return explain_total(read_element(result.get()), references[set], tolerances[set], n, elements,
                             canary::canary_total(inputs.canaries(set)));
    };
    calls.outputs = {&result, &scratch};
    calls.bytes = static_cast<double>(n) * sizeof(float);
    calls.measurements = {{"exact", tol::exactly_summable_in_float32(references[0])}, {"tolerance", tolerances[0]}};
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
