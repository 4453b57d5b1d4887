// The vector-sum harness: seeded input, exact host reference, the submission's calls, one tolerance check.
#include <cmath>
#include <sstream>

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

    cudaStream_t stream;
    CUGRADE_CUDA_CHECK(cudaStreamCreate(&stream));
    struct StreamGuard {
        cudaStream_t s;
        ~StreamGuard() { cudaStreamDestroy(s); }
    } guard{stream};

    const auto run_and_check = [&](auto entry, const char* who, int call) -> std::string {
        std::ostringstream which;
        which << who << "call " << call << " of " << c.calls;
        poison(result.get(), 1);
        poison(scratch.get(), SUM_SCRATCH_FLOATS);
        call_submission([&] { entry(input.get(), n, result.get(), scratch.get(), stream); }, which.str());
        const std::string problem = check_sum(result.to_host()[0], reference, tolerance, n);
        return problem.empty() ? "" : which.str() + ": " + problem;
    };

    for (int call = 1; call <= c.calls; ++call) {
        if (std::string problem = run_and_check(sum, "", call); !problem.empty()) {
            return CaseOutcome::wrong_answer(problem);
        }
    }

    nlohmann::json measurements = {{"exact", tol::exactly_summable_in_float32(reference)},
                                   {"tolerance", tolerance}};
    if (c.timing) {
        if (std::string problem = run_and_check(cugrade_reference_sum, "reference ", 1); !problem.empty()) {
            return {cugrade::protocol::status_harness_error, "the reference solution failed: " + problem, {}};
        }
        const TimingResult t = time_interleaved(
            *c.timing, stream, [&] { sum(input.get(), n, result.get(), scratch.get(), stream); },
            [&] { cugrade_reference_sum(input.get(), n, result.get(), scratch.get(), stream); });
        // The timed calls must still compute the sum: a submission that is fast because it is wrong earns nothing.
        if (std::string problem = run_and_check(sum, "after timing, ", 1); !problem.empty()) {
            return CaseOutcome::wrong_answer(problem);
        }
        measurements["submission_ms"] = t.submission_ms;
        measurements["reference_ms"] = t.reference_ms;
        measurements["samples"] = t.samples;
        measurements["bytes"] = static_cast<double>(n) * sizeof(float);
    }
    return CaseOutcome::passed(std::move(measurements));
}

}  // namespace

int main(int argc, char** argv) { return cugrade::harness::run_harness(argc, argv, run_case); }
