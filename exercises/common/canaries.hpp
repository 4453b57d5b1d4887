// Canaries: in a large case, a few values at secret places that move the answer far past its tolerance, and the
// value range scaled by a secret power of two, both drawn from the case's seed (which the grader mixes with a secret
// of the grading: docs/security.md). A submission that reads a sample of the input and scales it up, or writes the
// extremes a rubric's distribution is known to have, misses them; one that reads every element finds them. The
// exact answer is computed from the input as drawn, canaries and all, so a correct submission passes as before.
// Plain C++: the harness places the canaries on the GPU (seeded_input.cuh), the unit tests check them on the host.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "case_plan.hpp"
#include "seed_mix.hpp"

namespace cugrade::canary {

// From 2^20 elements on. Below it a sample is no faster to read than the whole input on any GPU the course uses
// (a 4 MiB input is read in a few microseconds), and a sampled answer is already wrong: a small case's tolerance is
// far below a sample's error. The sizes a sample pays off at, 2^26 and up, are all above it.
inline constexpr std::uint64_t threshold = std::uint64_t{1} << 20;

// How many canaries a total gets, and each one's share of n times the largest magnitude the distribution draws (the
// bound on the sum of |x| without them). Four of 2^-6 to 2^-5 of that bound are together 2^-4 to 2^-3 of it: more
// than 4 times any total's tolerance up to 2^29 elements (lambda sqrt(n) u, 2^-6.5 of sum |x| at n = 2^29 and
// lambda = 8), and small enough that a correct sum's rounding errors, which grow with the partial sums that hold a
// canary, stay well within the tolerance that the canaries raise (tolerance.hpp).
inline constexpr int total_count = 4;
inline constexpr double total_share = 0x1p-6;
// The most canaries one operand holds, in any mode.
inline constexpr int most = total_count;

// What an exercise's answer is, so what its canaries must be: none; values whose total a sample cannot estimate (a
// sum, a dot product: all of one sign, so that none cancels another); a new minimum and a new maximum outside the
// distribution's range.
enum class Mode { none, total, extremes };

struct Canary {
    std::uint64_t index = 0;
    float value = 0.0f;
};

// How one operand of a large case is drawn in this grading: its range scaled, and its canaries.
struct Draw {
    double scale = 1.0;
    std::vector<Canary> canaries;
    bool replaces_planted = false;  // the canaries are the distribution's min_at and max_at values
};

inline bool applies(Mode mode, std::uint64_t n) { return mode != Mode::none && n >= threshold; }

// Where a rubric's min_at and max_at put their value.
inline std::uint64_t planted_index(const std::string& at, std::uint64_t n) { return at == "first" ? 0 : n - 1; }

namespace detail {

inline constexpr std::uint64_t scale_salt = 0xca9a1e5ull;
inline constexpr std::uint64_t sign_salt = 0x5167ull;
inline constexpr std::uint64_t value_salt = 0x7a1eull;
inline constexpr std::uint64_t place_salt = 0x91acedull;

// A uniform number in [0, 1) with 53 random bits.
inline double uniform(std::uint64_t seed, std::uint64_t salt) {
    return static_cast<double>(plan::mix64(seed ^ plan::mix64(salt)) >> 11) * 0x1p-53;
}

// `count` different indices in [first, end), drawn from `seed`.
inline std::vector<std::uint64_t> secret_indices(std::uint64_t seed, int count, std::uint64_t first,
                                                 std::uint64_t end) {
    std::vector<std::uint64_t> indices;
    for (std::uint64_t draw = 0; static_cast<int>(indices.size()) < count && draw < 64u * count; ++draw) {
        const std::uint64_t index = first + plan::mix64(seed ^ plan::mix64(place_salt + draw)) % (end - first);
        if (std::find(indices.begin(), indices.end(), index) == indices.end()) {
            indices.push_back(index);
        }
    }
    return indices;
}

// `x` kept to 7 significant bits: a sum of a few such values and a power of two at least as fine is exact in
// float32, so that a total that stalled at a power of two (every element added to one float) ends on that power plus
// the canaries exactly, which the explanation recognises (total_check.cuh).
inline double coarse(double x) {
    int exponent = 0;
    const double fraction = std::frexp(x, &exponent);
    return std::ldexp(std::nearbyint(std::ldexp(fraction, 7)), exponent - 7);
}

}  // namespace detail

// The range scale of one operand: 2, 4 or 8, never the rubric's own range; 1 for integers, whose exactness rules
// (tolerance.hpp) a scale would change, and below the threshold. A power of two scales every float32 rounding of a
// sum or a product by the same factor, so a correct answer stays exactly as far inside its tolerance as before.
inline double range_scale(Mode mode, std::uint64_t n, const plan::Distribution& d, std::uint64_t seed) {
    if (!applies(mode, n) || d.kind == "integers") {
        return 1.0;
    }
    return std::ldexp(1.0, 1 + static_cast<int>(plan::mix64(seed ^ detail::scale_salt) % 3));
}

// The lowest and highest value the distribution draws, scaled.
struct Range {
    double low = 0.0;
    double high = 0.0;
};
inline Range scaled_range(const plan::Distribution& d, double scale) {
    if (d.kind == "constant") {
        return {d.value * scale, d.value * scale};
    }
    return {d.low * scale, d.high * scale};
}

// Total canaries of one operand: `total_count` values of one sign at secret places in the input's second half (so
// that a total that stalls early, every element added to one float in index order, stalls before them), each
// total_share to twice that of n times the largest magnitude drawn, or its operands-th root for a product of
// operands: a dot product's canaries sit at the same places in a and b (`place_seed` is the case's, `value_seed`
// the operand's), and their products make the total's canaries.
inline std::vector<Canary> total_canaries(std::uint64_t n, const plan::Distribution& d, double scale,
                                          std::size_t operands, std::uint64_t value_seed, std::uint64_t place_seed) {
    const Range range = scaled_range(d, scale);
    const double drawn = std::max(std::fabs(range.low), std::fabs(range.high));
    const double largest = drawn > 0 ? drawn : scale;  // all zeros: canaries of the scale's size
    const double mean = range.low + range.high;
    const bool heads = (plan::mix64(value_seed ^ detail::sign_salt) & 1) != 0;
    const double sign = mean > 0 ? 1.0 : mean < 0 ? -1.0 : heads ? 1.0 : -1.0;
    const double root = 1.0 / static_cast<double>(std::max<std::size_t>(1, operands));
    const double base = largest * std::pow(static_cast<double>(n) * total_share, root);
    std::vector<Canary> canaries;
    for (const std::uint64_t index : detail::secret_indices(place_seed, total_count, n / 2, n - 1)) {
        const double share = 1.0 + detail::uniform(value_seed, detail::value_salt + canaries.size());
        double value = detail::coarse(base * share);
        if (d.kind == "integers") {
            value = std::nearbyint(value);
        }
        canaries.push_back({index, static_cast<float>(sign * value)});
    }
    return canaries;
}

// Extreme canaries: one value below the range and one above it, each at a secret place, or at the distribution's
// min_at or max_at where it plants one. Each keeps the range's sign (below a range of positive values, a positive
// value; above negative ones, a negative one), so that a running minimum or maximum that starts at 0 stays wrong.
inline std::vector<Canary> extreme_canaries(std::uint64_t n, const plan::Distribution& d, double scale,
                                            std::uint64_t value_seed, std::uint64_t place_seed) {
    const Range range = scaled_range(d, scale);
    const double span = std::max(range.high - range.low, scale);
    const double below = detail::uniform(value_seed, detail::value_salt);
    const double above = detail::uniform(value_seed, detail::value_salt + 1);
    const double min = range.low > 0 ? range.low * (0.5 - 0.25 * below) : range.low - span * (1.0 + below);
    const double max = range.high < 0 ? range.high * (0.5 - 0.25 * above) : range.high + span * (1.0 + above);
    const std::vector<std::uint64_t> secret = detail::secret_indices(place_seed, 2, 1, n - 1);
    return {{d.min_at.empty() ? secret.at(0) : planted_index(d.min_at, n), static_cast<float>(min)},
            {d.max_at.empty() ? secret.at(1) : planted_index(d.max_at, n), static_cast<float>(max)}};
}

// How one operand of a case of n elements is drawn: unchanged where canaries do not apply.
inline Draw draw(Mode mode, std::uint64_t n, const plan::Distribution& d, std::size_t operands,
                 std::uint64_t value_seed, std::uint64_t place_seed) {
    Draw result;
    if (!applies(mode, n)) {
        return result;
    }
    result.scale = range_scale(mode, n, d, value_seed);
    if (mode == Mode::total) {
        result.canaries = total_canaries(n, d, result.scale, operands, value_seed, place_seed);
    } else {
        result.canaries = extreme_canaries(n, d, result.scale, value_seed, place_seed);
        result.replaces_planted = true;
    }
    return result;
}

// The canaries' own total: what a total that stalled before them still gained from them.
inline double canary_total(const std::vector<Canary>& canaries) {
    double total = 0.0;
    for (const Canary& canary : canaries) {
        total += canary.value;
    }
    return total;
}

}  // namespace cugrade::canary
