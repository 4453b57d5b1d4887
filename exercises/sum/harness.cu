// The vector-sum harness: seeded input, its exact sum computed on the GPU, the submission's calls, one tolerance
// check.
#include <cmath>
#include <sstream>
#include <string>

#include "device_reduce.cuh"
#include "harness.cuh"
#include "sum.h"
#include "tolerance.hpp"

// The instructor's reference, linked into this program under its own name and made local by the grader, so the
// submission cannot call it.
extern "C" decltype(sum) cugrade_reference_sum;

namespace {

using namespace cugrade::harness;
namespace tol = cugrade::tolerance;

std::string check_sum(float obtained, const tol::SumReference& reference, double tolerance, std::size_t n) {
    std::ostringstream detail;
    detail << "n=" << n << ": expected " << describe_number(reference.sum) << ", got " << describe_number(obtained);
    if (is_poison(obtained)) {
        detail << " (result was never written)";
    } else if (!std::isfinite(obtained)) {
        detail << " (not a finite number)";
    } else if (!tol::within_tolerance(obtained, reference.sum, tolerance)) {
        detail << " (off by " << describe_number(std::abs(obtained - reference.sum)) << ", tolerance "
               << describe_number(tolerance) << ")";
    } else {
        return "";
    }
    return detail.str();
}

// One input element as a term of the reference sum, and two partial reference sums combined. Summed in double in
// whatever order CUB picks: tolerance.hpp says why that is as good as exact for every tolerance.
struct AsSumTerm {
    __host__ __device__ tol::SumReference operator()(float x) const {
        const double value = x;
        return {value, fabs(value), rint(value) == value};
    }
};
struct AddSumTerms {
    __host__ __device__ tol::SumReference operator()(const tol::SumReference& a, const tol::SumReference& b) const {
        return {a.sum + b.sum, a.abs_sum + b.abs_sum, a.all_integers && b.all_integers};
    }
};

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size;
    const auto inputs = seeded_inputs(c);
    std::vector<tol::SumReference> references;
    std::vector<double> tolerances;
    {
        SharedGpu gpu;
        for (const auto& input : inputs) {
            references.push_back(reduce_on_device(input->get(), n, AsSumTerm{}, AddSumTerms{}, tol::SumReference{}));
            tolerances.push_back(tol::summation_tolerance(n, references.back(), c.lambda));
        }
    }
    GuardedBuffer result("result", 1);
    GuardedBuffer scratch("scratch", SUM_SCRATCH_FLOATS);

    CaseCalls<Entry<decltype(sum)>> calls;
    calls.submission = submission_entry<decltype(sum)>();
    calls.reference = &cugrade_reference_sum;
    calls.variants = static_cast<int>(inputs.size());
    calls.invoke = [&](auto entry, cudaStream_t stream, int v) {
        entry(inputs[v]->get(), n, result.get(), scratch.get(), stream);
    };
    calls.poison = [&] {
        result.poison_all();
        scratch.poison_all();
    };
    calls.check = [&](int v) { return check_sum(result.to_host()[0], references[v], tolerances[v], n); };
    calls.bytes = static_cast<double>(n) * sizeof(float);
    for (const auto& input : inputs) {
        calls.inputs.push_back(input.get());
    }
    calls.outputs = {&result, &scratch};
    calls.measurements = {{"exact", tol::exactly_summable_in_float32(references[0])}, {"tolerance", tolerances[0]}};
    return run_calls(c, calls);
}

}  // namespace

int main(int argc, char** argv) { return cugrade::harness::run_harness(argc, argv, run_case); }
