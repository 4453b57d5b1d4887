// The dot-product harness: two seeded vectors, their exact dot product computed on the GPU, the submission's calls,
// one tolerance check that follows the condition of the sum of products.
#include <thrust/iterator/counting_iterator.h>

#include <string>
#include <vector>

#include "device_reduce.cuh"
#include "dot.h"
#include "harness.cuh"
#include "tolerance.hpp"
#include "total_check.cuh"

CUGRADE_REFERENCE(dot);

namespace {

using namespace cugrade::harness;
namespace canary = cugrade::canary;
namespace tol = cugrade::tolerance;

// Product i as a term of the exact sum: a product of two floats is exact in double.
struct ExactProduct {
    const float* a;
    const float* b;
    __host__ __device__ tol::SumReference operator()(std::size_t i) const {
        return AsSumTerm{}(static_cast<double>(a[i]) * static_cast<double>(b[i]));
    }
};

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size();
    SeededInputs inputs(c, 2, canary::Mode::total);
    PerInputSet<tol::SumReference> references(inputs, [&](int set) {
        return reduce_on_device(thrust::counting_iterator<std::size_t>(0), n,
                                ExactProduct{inputs(set, 0), inputs(set, 1)}, AddSumTerms{}, tol::SumReference{});
    });
    PerInputSet<double> tolerances(inputs, [&](int set) { return tol::dot_tolerance(n, references[set], c.lambda); });
    GuardedBuffer result("result", 1);
    GuardedBuffer scratch("scratch", DOT_SCRATCH_FLOATS);

    CaseCalls<decltype(dot)> calls(cugrade_reference_dot, inputs, {"input a", "input b"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set, 0), inputs(set, 1), n, result.get(), scratch.get(), stream);
    };
    calls.check = [&](int set) { return check_total(read_element(result.get()), references[set], tolerances[set], n); };
    calls.explain = [&](int set) {
        const TotalTerms products{"product", "products", [&](std::size_t first, std::size_t count) {
                                      const std::vector<float> a = read_range(inputs(set, 0), first, count);
                                      const std::vector<float> b = read_range(inputs(set, 1), first, count);
                                      std::vector<double> product(count);
                                      for (std::size_t i = 0; i < count; ++i) {
                                          product[i] = static_cast<double>(a[i]) * b[i];
                                      }
                                      return product;
                                  }};
        return explain_total(read_element(result.get()), references[set], tolerances[set], n, products);
    };
    calls.outputs = {&result, &scratch};
    calls.bytes = 2.0 * static_cast<double>(n) * sizeof(float);
    calls.measurements = {{"exact", tol::exactly_summable_in_float32(references[0])}, {"tolerance", tolerances[0]}};
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
