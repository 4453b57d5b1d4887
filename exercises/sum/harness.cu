// The vector-sum harness: seeded input, exact host reference, the submission's calls, one tolerance check.
#include <cmath>
#include <sstream>
#include <string>

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

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size;
    DeviceBuffer<float> input(n);
    DeviceBuffer<float> result(1);
    DeviceBuffer<float> scratch(SUM_SCRATCH_FLOATS);
    generate(input.get(), n, c.input, c.seed);

    const std::vector<float> host_input = input.to_host();
    const tol::SumReference reference = tol::reference_sum(host_input.begin(), host_input.end());
    const double tolerance = tol::summation_tolerance(n, reference, c.lambda);

    return run_calls(
        c, &sum, &cugrade_reference_sum,
        [&](auto entry, cudaStream_t stream) { entry(input.get(), n, result.get(), scratch.get(), stream); },
        [&] {
            poison(result.get(), 1);
            poison(scratch.get(), SUM_SCRATCH_FLOATS);
        },
        [&] { return check_sum(result.to_host()[0], reference, tolerance, n); },
        static_cast<double>(n) * sizeof(float),
        {{"exact", tol::exactly_summable_in_float32(reference)}, {"tolerance", tolerance}});
}

}  // namespace

int main(int argc, char** argv) { return cugrade::harness::run_harness(argc, argv, run_case); }
