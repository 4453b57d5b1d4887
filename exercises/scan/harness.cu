// The prefix-sum harness: seeded input, its exact prefix sums computed on the GPU, the submission's calls, and a
// check of every output element against its own tolerance: the rounding bound of a sum of that many terms, scaled by
// the prefix sum of |x| (tolerance.hpp), exact for integer inputs whose prefixes stay within 2^24.
#include <thrust/iterator/transform_iterator.h>

#include <sstream>
#include <string>
#include <vector>

#include "device_reduce.cuh"
#include "harness.cuh"
#include "scan.h"
#include "tolerance.hpp"

CUGRADE_REFERENCE(scan);

namespace {

using namespace cugrade::harness;
namespace tol = cugrade::tolerance;

// A prefix's exact sum and its sum of |x|, in double: exact enough for every tolerance (tolerance.hpp).
struct Prefix {
    double sum = 0.0;
    double abs_sum = 0.0;
};
struct AsPrefix {
    __host__ __device__ Prefix operator()(float x) const { return {x, fabs(static_cast<double>(x))}; }
};
struct AddPrefixes {
    __host__ __device__ Prefix operator()(const Prefix& a, const Prefix& b) const {
        return {a.sum + b.sum, a.abs_sum + b.abs_sum};
    }
};

// What output element i must hold: the sum of the first `terms` inputs.
__host__ __device__ inline std::size_t terms_of(std::size_t i, bool exclusive) { return exclusive ? i : i + 1; }

struct Mismatches {
    unsigned long long wrong = 0;
    unsigned long long first_wrong = ~0ull;
};

__global__ void compare_prefixes_kernel(const float* output, const Prefix* prefixes, std::size_t n, bool exclusive,
                                        bool all_integers, double lambda, Mismatches* found) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    unsigned long long wrong = 0, first_wrong = ~0ull;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const std::size_t terms = terms_of(i, exclusive);
        const Prefix expected = terms == 0 ? Prefix{} : prefixes[terms - 1];
        const double tolerance =
            tol::summation_tolerance(terms, {expected.sum, expected.abs_sum, all_integers}, lambda);
        const float obtained = output[i];
        if (is_poison(obtained) || !tol::within_tolerance(obtained, expected.sum, tolerance)) {
            first_wrong = wrong++ == 0 ? i : first_wrong;
        }
    }
    if (wrong > 0) {
        atomicAdd(&found->wrong, wrong);
        atomicMin(&found->first_wrong, first_wrong);
    }
}

// The exact prefix sums of one input set, computed when a check first needs them: the speed test's timed calls
// rotate through three sets, and three 2^28-element tables would hold 12 GiB.
class ExactPrefixes {
public:
    ExactPrefixes(const SeededInputs& inputs, std::size_t n) : inputs_(inputs), n_(n), prefixes_(n) {}

    const Prefix* of(int set) {
        const std::pair<int, std::uint64_t> wanted{set, inputs_.draws(set)};  // a set drawn again is another input
        if (wanted != ready_) {
            SharedGpu gpu;
            scan_on_device(thrust::make_transform_iterator(inputs_(set), AsPrefix{}), prefixes_.get(), n_,
                           AddPrefixes{});
            ready_ = wanted;
        }
        return prefixes_.get();
    }

private:
    const SeededInputs& inputs_;
    std::size_t n_;
    DeviceBuffer<Prefix> prefixes_;
    std::pair<int, std::uint64_t> ready_{-1, 0};
};

Mismatches find_mismatches(const float* output, const Prefix* prefixes, std::size_t n, bool exclusive,
                           bool all_integers, double lambda) {
    DeviceBuffer<Mismatches> counted(1);
    set_element(counted.get(), Mismatches{});
    compare_prefixes_kernel<<<grid_for(n), 256>>>(output, prefixes, n, exclusive, all_integers, lambda, counted.get());
    CUGRADE_CUDA_CHECK(cudaGetLastError());
    return read_element(counted.get());
}

std::string check_scan(const float* output, ExactPrefixes& exact, int set, std::size_t n, bool exclusive,
                       bool all_integers, double lambda) {
    if (n == 0) {
        return "";
    }
    const Prefix* prefixes = exact.of(set);
    const Mismatches found = find_mismatches(output, prefixes, n, exclusive, all_integers, lambda);
    if (found.wrong == 0) {
        return "";
    }
    const std::size_t first = found.first_wrong;
    const std::size_t terms = terms_of(first, exclusive);
    const Prefix expected = terms == 0 ? Prefix{} : read_element(prefixes + terms - 1);
    const double tolerance = tol::summation_tolerance(terms, {expected.sum, expected.abs_sum, all_integers}, lambda);
    const float obtained = read_element(output + first);
    std::ostringstream detail;
    detail << "n=" << n << " (" << (exclusive ? "exclusive" : "inclusive") << "): " << found.wrong << " of " << n
           << " elements wrong; the first is output[" << first << "]: expected " << describe_number(expected.sum)
           << " (the sum of the first " << terms << " inputs), got " << describe_number(obtained);
    if (is_poison(obtained)) {
        detail << " (never written)";
    } else if (std::isfinite(obtained)) {
        detail << " (off by " << describe_number(std::abs(obtained - expected.sum)) << ", tolerance "
               << describe_number(tolerance) << ")";
    }
    return detail.str();
}

// The mistakes students make most: the other kind of scan; right up to a block's boundary and never written after
// it (too few blocks); right up to a block's boundary and, after it, each block's own scan without the totals of
// the blocks before it.
std::optional<Explanation> explain_scan(const float* output, ExactPrefixes& exact, int set, std::size_t n,
                                        bool exclusive, bool all_integers, double lambda) {
    const Prefix* prefixes = exact.of(set);
    Explanation e;
    if (find_mismatches(output, prefixes, n, !exclusive, all_integers, lambda).wrong == 0) {
        e.summary = exclusive ? "the output is the inclusive scan where the exclusive one is asked for"
                              : "the output is the exclusive scan where the inclusive one is asked for";
        e.category = "the other scan: inclusive for exclusive or the reverse";
        e.hint = "exclusive: output[i] is the sum of the inputs before i, so output[0] is 0; inclusive: it adds "
                 "input i too";
        e.topic = "parameter";
        e.evidence.push_back("every element equals the " + std::string(exclusive ? "inclusive" : "exclusive") +
                             " scan of the input");
        return e;
    }
    const Mismatches found = find_mismatches(output, prefixes, n, exclusive, all_integers, lambda);
    const std::size_t first = found.first_wrong;
    const std::size_t block = first & (~first + 1);  // the largest power of two that divides it
    if (first == 0 || block < 32) {
        return std::nullopt;
    }
    const float obtained = read_element(output + first);
    const std::string where = "output[0] to output[" + std::to_string(first - 1) + "] are right; output[" +
                              std::to_string(first) + "] is the first wrong element, at a multiple of " +
                              std::to_string(block);
    if (is_poison(obtained) && found.wrong == n - first) {
        e.summary = "nothing is written past a block's boundary: the grid covers only the first blocks";
        e.category = "elements past the first blocks never written";
        e.hint = "launch enough blocks for every element, (n + ELEMENTS_PER_BLOCK - 1) / ELEMENTS_PER_BLOCK, and "
                 "carry each block's total to the blocks after it";
        e.topic = "grid";
        e.evidence = {where, "every element from output[" + std::to_string(first) + "] on is never written"};
        return e;
    }
    const std::size_t terms = terms_of(first, exclusive);
    const double before_block = read_element(prefixes + first - 1).sum;  // the first `first` inputs
    const double expected = terms == 0 ? 0.0 : read_element(prefixes + terms - 1).sum;
    const double own_scan = expected - before_block;
    // At the block's first element its own scan is one input (inclusive) or none (exclusive): exact.
    if (!is_poison(obtained) && tol::within_tolerance(obtained, own_scan, 1e-6 * std::abs(own_scan))) {
        e.summary = "right up to a block's boundary; after it, each block's scan lacks the total of the blocks "
                    "before it";
        e.category = "blocks' offsets not added";
        e.hint = "the blocks' totals are scanned too, and each block adds the sum of the totals before it to every "
                 "element it writes";
        e.topic = "combine";
        e.evidence = {where, "output[" + std::to_string(first) + "] is " + describe_number(obtained) +
                                 ", the block's own scan: " + describe_number(before_block) +
                                 ", the sum of the inputs before the block, is missing"};
        return e;
    }
    return std::nullopt;
}

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size();
    const bool exclusive = c.parameter("exclusive") != 0.0;
    SeededInputs inputs(c, 1);
    PerInputSet<tol::SumReference> totals(inputs, [&](int set) {
        return reduce_on_device(inputs(set), n, AsSumTerm{}, AddSumTerms{}, tol::SumReference{});
    });
    ExactPrefixes exact(inputs, n);
    GuardedBuffer output("the output", n);
    GuardedBuffer scratch("scratch", scan_scratch_floats(n));

    CaseCalls<decltype(scan)> calls(cugrade_reference_scan, inputs, {"input"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set), n, output.get(), exclusive ? 1 : 0, scratch.get(), stream);
    };
    calls.check = [&](int set) {
        return check_scan(output.get(), exact, set, n, exclusive, totals[set].all_integers, c.lambda);
    };
    calls.explain = [&](int set) {
        return explain_scan(output.get(), exact, set, n, exclusive, totals[set].all_integers, c.lambda);
    };
    calls.outputs = {&output, &scratch};
    calls.bytes = 2.0 * static_cast<double>(n) * sizeof(float);
    calls.measurements = {{"exact", tol::exactly_summable_in_float32(totals[0])}, {"exclusive", exclusive}};
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
