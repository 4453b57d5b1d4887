// The accurate-sum harness: sum's check with the tolerance of a compensated sum (tolerance.hpp), about 3 units in
// the last place of the sum of |x|, on inputs whose plain float32 sums all err the same way. A result within a plain
// sum's tolerance but outside this one is explained as an uncompensated sum.
#include <cmath>
#include <sstream>
#include <string>

#include "device_reduce.cuh"
#include "harness.cuh"
#include "sum_accurate.h"
#include "tolerance.hpp"
#include "total_check.cuh"

CUGRADE_REFERENCE(sum_accurate);

namespace {

using namespace cugrade::harness;
namespace canary = cugrade::canary;
namespace tol = cugrade::tolerance;

// Right to a plain float32 sum's rounding, but not to a compensated sum's: the one mistake this exercise is about.
std::optional<Explanation> explain_uncompensated(float obtained, const tol::SumReference& reference, std::size_t n,
                                                 double lambda) {
    // The worst case of a plain sum, not its probabilistic bound: on these inputs a plain sum's rounding errors all
    // lean one way, and can pass the latter.
    const double plain = tol::worst_summation_error(n, reference);
    if (!tol::within_tolerance(obtained, reference.sum, plain)) {
        return std::nullopt;
    }
    Explanation e;
    e.summary = "the sum is as accurate as a plain float32 sum, not as a compensated one: the rounding errors of the "
                "additions add up";
    e.category = "a sum without compensation";
    e.hint = "keep a compensation beside each running sum (Kahan or Neumaier) in each thread, and combine the "
             "threads' sums and compensations with a compensated addition as well";
    e.topic = "inputs";
    std::ostringstream evidence;
    evidence << "off by " << describe_number(static_cast<float>(std::abs(obtained - reference.sum)))
             << ": within a plain float32 sum's " << describe_number(static_cast<float>(plain)) << ", beyond "
             << describe_number(static_cast<float>(tol::compensated_summation_tolerance(n, reference, lambda)));
    e.evidence.push_back(evidence.str());
    return e;
}

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size();
    SeededInputs inputs(c, 1, canary::Mode::total);
    PerInputSet<tol::SumReference> references(inputs, [&](int set) {
        return reduce_on_device(inputs(set), n, AsSumTerm{}, AddSumTerms{}, tol::SumReference{});
    });
    PerInputSet<double> tolerances(
        inputs, [&](int set) { return tol::compensated_summation_tolerance(n, references[set], c.lambda); });
    GuardedBuffer result("result", 1);
    GuardedBuffer scratch("scratch", SUM_ACCURATE_SCRATCH_FLOATS);

    CaseCalls<decltype(sum_accurate)> calls(cugrade_reference_sum_accurate, inputs, {"input"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set), n, result.get(), scratch.get(), stream);
    };
    calls.check = [&](int set) { return check_total(read_element(result.get()), references[set], tolerances[set], n); };
    calls.explain = [&](int set) -> std::optional<Explanation> {
        const float obtained = read_element(result.get());
        const TotalTerms elements{"element", "elements", [&](std::size_t first, std::size_t count) {
                                      const std::vector<float> x = read_range(inputs(set), first, count);
                                      return std::vector<double>(x.begin(), x.end());
                                  }};
        // Within a plain sum's rounding, rounding is the likeliest cause, whatever else the difference matches.
        if (auto found = explain_uncompensated(obtained, references[set], n, c.lambda)) {
            return found;
        }
        return explain_total(obtained, references[set], tolerances[set], n, elements,
                             canary::canary_total(inputs.canaries(set)));
    };
    calls.outputs = {&result, &scratch};
    calls.bytes = static_cast<double>(n) * sizeof(float);
    calls.measurements = {{"exact", tol::exactly_summable_in_float32(references[0])}, {"tolerance", tolerances[0]}};
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
