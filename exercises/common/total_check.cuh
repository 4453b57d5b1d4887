// The check of an exercise whose answer is one float that sums many values (a sum, a dot product): the exact total
// from the GPU, a tolerance from tolerance.hpp, a message that says how far off the answer is, and what a wrong
// total is when it is something simple (the total less its last terms, terms counted twice, NaN).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "describe.hpp"
#include "explanation.hpp"
#include "guarded_buffer.cuh"
#include "left_out.hpp"
#include "tolerance.hpp"

namespace cugrade::harness {

// "n=31: expected 62, got 61 (off by 1, tolerance 0)", or "" when `obtained` is within tolerance.
inline std::string check_total(float obtained, const tolerance::SumReference& reference, double tolerance,
                               std::size_t n) {
    std::ostringstream detail;
    detail << "n=" << n << ": expected " << describe_number(reference.sum) << ", got " << describe_number(obtained);
    if (is_poison(obtained)) {
        detail << " (result was never written)";
    } else if (!std::isfinite(obtained)) {
        detail << " (not a finite number)";
    } else if (!tolerance::within_tolerance(obtained, reference.sum, tolerance)) {
        detail << " (off by " << describe_number(std::abs(obtained - reference.sum)) << ", tolerance "
               << describe_number(tolerance) << ")";
    } else {
        return "";
    }
    return detail.str();
}

// The terms of a total as an explanation names and reads them: "element" and x[i], "product" and a[i] b[i].
struct TotalTerms {
    std::string noun;    // "element"
    std::string plural;  // "elements"
    // Terms first to first + count - 1, in double.
    std::function<std::vector<double>(std::size_t first, std::size_t count)> read;
};

// What a total that failed its check is, when it is one of the mistakes students make most: terms at the end left
// out (an index one short, the last partial block), the first term left out, terms added more than once (more than
// the sum of every term's magnitude), NaN from finite terms (added into memory never set), a total that stopped
// growing (every term added to one float). Nothing otherwise. The candidates are few, so that a wrong total matches
// one of them by chance only rarely. `canaries` is the total of the input's canaries (canaries.hpp), which lie past
// the place where such a total stops growing: it ends on a power of two plus them.
inline std::optional<Explanation> explain_total(float obtained, const tolerance::SumReference& reference,
                                                double tolerance, std::size_t n, const TotalTerms& terms,
                                                double canaries = 0.0) {
    if (is_poison(obtained)) {
        return std::nullopt;  // the detail says it: never written
    }
    Explanation e;
    if (!std::isfinite(obtained)) {
        e.summary = "a result that is not a finite number from finite " + terms.plural +
                    ": the result is added into before anything sets it";
        e.category = "the result is added to before it is set";
        e.hint = "cugrade fills outputs and scratch with NaN before each call, so a result that only ever has values "
                 "added to it (atomicAdd into the result) stays NaN: set it first, with a write or "
                 "cudaMemsetAsync on the call's stream";
        e.topic = "scratch";
        e.evidence.push_back("got " + describe_number(obtained) + ", expected " + describe_number(reference.sum));
        return e;
    }
    const double got = obtained;
    if (std::abs(got) > reference.abs_sum + tolerance) {
        e.summary = "a result larger than all the " + terms.plural + " together could make: some " + terms.plural +
                    " are added more than once";
        e.category = "terms added more than once";
        e.hint = "ranges of blocks that overlap: a grid-stride loop steps by the whole grid, blockDim.x * gridDim.x, "
                 "and each block starts at blockIdx.x * blockDim.x";
        e.topic = "grid";
        e.evidence.push_back("got " + describe_number(got) + ", but the " + terms.plural + "' magnitudes add up to " +
                             describe_number(reference.abs_sum));
        return e;
    }
    if (got == 0.0 && !tolerance::within_tolerance(0.0, reference.sum, tolerance)) {
        e.summary = "the result is 0, as if no " + terms.noun + " were added";
        e.category = "no " + terms.noun + " added: the result is 0";
        e.hint = "a grid of n / THREADS blocks has no block at all when n is below THREADS: round up, (n + THREADS - "
                 "1) / THREADS; or the total is never written to the result";
        e.topic = "grid";
        e.evidence.push_back("expected " + describe_number(reference.sum) + ", got 0");
        return e;
    }
    // The canaries are of one sign: the sum of their magnitudes is that of their total.
    const tolerance::SumReference without_canaries{reference.sum - canaries, reference.abs_sum - std::abs(canaries),
                                                   reference.all_integers};
    if (const int exponent = tolerance::stalled_total_exponent(got - canaries, without_canaries); exponent >= 0) {
        const double spacing = std::ldexp(1.0, exponent - 23);  // between floats from there up
        e.summary = "the total stops growing at a power of two: every " + terms.noun +
                    " is added to one float, and once it is large enough no " + terms.noun + " changes it";
        e.category = "the total stops growing: every " + terms.noun + " added to one float";
        e.hint = "from 2^24 on, floats are 2 apart and more, so adding a " + terms.noun +
                 " of less than half that spacing leaves a total as it is: this is what an atomicAdd per " +
                 terms.noun +
                 " into the result, or one thread's loop over them all, does to a large input. Add "
                 "within each block first (shared memory or warp shuffles), then combine one partial per block: "
                 "each partial stays small enough to add exactly";
        e.topic = "combine";
        e.evidence.push_back("expected " + describe_number(reference.sum) + ", got " + describe_number(got) + " = 2^" +
                             std::to_string(exponent) +
                             (canaries != 0.0 ? " plus the input's canaries, " + describe_number(canaries) : "") +
                             ", where floats are " + describe_number(spacing) + " apart");
        return e;
    }
    if (n < 2) {
        return std::nullopt;
    }
    // Left out at the end: an index one short, or the last partial block.
    const std::vector<std::size_t> counts = left_out_counts(n);
    const std::size_t last = counts.empty() ? 0 : counts.back();
    const std::vector<double> tail = terms.read(n - last, last);
    double left_out = 0.0;
    std::size_t counted = 0;
    for (const std::size_t k : counts) {
        for (; counted < k; ++counted) {
            left_out += tail[last - 1 - counted];
        }
        if (tolerance::within_tolerance(got, reference.sum - left_out, tolerance)) {
            e = left_out_explanation(k, n, terms.noun, terms.plural);
            e.evidence.push_back("expected " + describe_number(reference.sum) + ", got " + describe_number(got) +
                                 ": the total of indices 0 to " + std::to_string(n - k - 1) + ", without " +
                                 last_indices(k, n));
            return e;
        }
    }
    // Left out at the start: a loop that begins at 1.
    const std::vector<double> head = terms.read(0, 1);
    if (tolerance::within_tolerance(got, reference.sum - head[0], tolerance)) {
        e.summary = "the first " + terms.noun + " is left out";
        e.category = "the first " + terms.noun + " left out";
        e.hint = "an index that starts at 1, or a first element read but not added";
        e.topic = "bounds";
        e.evidence.push_back("expected " + describe_number(reference.sum) + ", got " + describe_number(got) +
                             ": the total without index 0");
        return e;
    }
    return std::nullopt;
}

}  // namespace cugrade::harness
