// The summation tolerance: every float32 summation order passes, while dropping or double-counting one element fails
// wherever the check can see it. Same shape throughout: seeded input, host reference, a float32 order, one check.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "catch.hpp"
#include "tolerance.hpp"

namespace {

namespace tol = cugrade::tolerance;
constexpr double lambda = 8.0;

enum class Kind { integers, positive, signed_values };

std::vector<float> seeded_input(std::size_t n, Kind kind, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<float> x(n);
    std::uniform_int_distribution<int> integers(1, 3);
    std::uniform_real_distribution<float> positive(0.0f, 1.0f);
    std::uniform_real_distribution<float> signed_values(-1.0f, 1.0f);
    for (auto& v : x) {
        v = kind == Kind::integers   ? static_cast<float>(integers(rng))
            : kind == Kind::positive ? positive(rng)
                                     : signed_values(rng);
    }
    return x;
}

float sequential(const std::vector<float>& x) {
    float s = 0.0f;
    for (float v : x) {
        s += v;
    }
    return s;
}

float pairwise(const float* x, std::size_t n) {
    if (n == 0) {
        return 0.0f;
    }
    if (n == 1) {
        return x[0];
    }
    return pairwise(x, n / 2) + pairwise(x + n / 2, n - n / 2);
}

// A GPU's shape: `threads` grid-stride accumulators, then a tree over them.
float grid_stride(const std::vector<float>& x, std::size_t threads) {
    std::vector<float> acc(threads, 0.0f);
    for (std::size_t i = 0; i < x.size(); ++i) {
        acc[i % threads] += x[i];
    }
    return pairwise(acc.data(), acc.size());
}

std::vector<float> orders(const std::vector<float>& x, std::uint64_t seed) {
    std::vector<float> reversed(x.rbegin(), x.rend());
    std::vector<float> shuffled = x;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(seed));
    return {sequential(x),       sequential(reversed),   sequential(shuffled), pairwise(x.data(), x.size()),
            grid_stride(x, 256), grid_stride(x, 1 << 14)};
}

bool accepted(const std::vector<float>& input, float obtained) {
    const auto ref = tol::reference_sum(input.begin(), input.end());
    return tol::within_tolerance(obtained, ref.sum, tol::summation_tolerance(input.size(), ref, lambda));
}

}  // namespace

TEST_CASE("every float32 summation order passes at every size") {
    const auto kind = GENERATE(Kind::integers, Kind::positive, Kind::signed_values);
    const std::size_t n = GENERATE(0, 1, 2, 31, 33, 257, 1025, 65537, 1 << 20);
    const auto input = seeded_input(n, kind, 1000 + n);
    for (const float obtained : orders(input, n)) {
        CHECK(accepted(input, obtained));
    }
}

TEST_CASE("integer inputs whose sum of magnitudes fits float32's integers are checked exactly") {
    const std::size_t n = GENERATE(1, 2, 31, 1025, 65537, 4194301);
    const auto input = seeded_input(n, Kind::integers, 7 + n);
    const auto ref = tol::reference_sum(input.begin(), input.end());
    REQUIRE(tol::exactly_summable_in_float32(ref));
    CHECK(tol::summation_tolerance(n, ref, lambda) == 0.0);
    CHECK(static_cast<double>(pairwise(input.data(), n)) == ref.sum);
}

TEST_CASE("dropping or double-counting one element fails wherever the sum is exact") {
    const std::size_t n = GENERATE(1, 2, 31, 32, 33, 255, 257, 1023, 1025, 65535, 65537, 4194301);
    const auto input = seeded_input(n, Kind::integers, 99 + n);
    for (const std::size_t i : {std::size_t{0}, n / 2, n - 1}) {
        const float dropped = pairwise(input.data(), n) - input[i];
        const float doubled = pairwise(input.data(), n) + input[i];
        CHECK_FALSE(accepted(input, dropped));
        CHECK_FALSE(accepted(input, doubled));
    }
}

TEST_CASE("dropping one element of a real-valued input fails at small sizes") {
    const std::size_t n = GENERATE(2, 31, 33, 255, 257);
    const auto input = seeded_input(n, Kind::positive, 5 + n);
    const float without_last = pairwise(input.data(), n - 1);
    CHECK_FALSE(accepted(input, without_last));
}

TEST_CASE("the tolerance is the smaller of the deterministic and probabilistic bounds") {
    tol::SumReference ref;
    ref.sum = 10.0;
    ref.abs_sum = 100.5;
    ref.all_integers = false;
    const double u = tol::float32_unit_roundoff;
    CHECK(tol::summation_tolerance(1, ref, lambda) == 0.0);
    CHECK(tol::summation_tolerance(2, ref, lambda) == Approx(u / (1 - u) * 100.5));
    CHECK(tol::summation_tolerance(1025, ref, lambda) == Approx(lambda * 32.0 * u * 100.5));
}

TEST_CASE("a result that is not a finite number never passes") {
    CHECK_FALSE(tol::within_tolerance(std::nan(""), 0.0, 1e30));
    CHECK_FALSE(tol::within_tolerance(INFINITY, 0.0, 1e30));
}

// The sum of x left to right with Kahan's compensation, as a thread of the accurate-sum exercise adds.
float kahan(const std::vector<float>& x) {
    volatile float sum = 0.0f, c = 0.0f;  // volatile: no reassociation, as nvcc keeps it without fast math
    for (const float v : x) {
        const float y = v - c;
        const float t = sum + y;
        c = (t - sum) - y;
        sum = t;
    }
    return sum;
}

TEST_CASE("a compensated sum's tolerance passes Kahan's sum of 0.1s and fails the plain one") {
    const std::size_t n = GENERATE(1024, 4096, 65536);
    const std::vector<float> tenths(n, 0.1f);
    const auto ref = tol::reference_sum(tenths.begin(), tenths.end());
    const double tolerance = tol::compensated_summation_tolerance(n, ref, lambda);
    CHECK(tol::within_tolerance(kahan(tenths), ref.sum, tolerance));
    CHECK_FALSE(tol::within_tolerance(sequential(tenths), ref.sum, tolerance));
    // The plain sum is still within the worst case of any float32 sum; but its rounding errors all lean one way, so
    // beyond n = 1024 it falls outside the probabilistic bound, which assumes they do not.
    CHECK(tol::within_tolerance(sequential(tenths), ref.sum, tol::worst_summation_error(n, ref)));
    CHECK(tol::within_tolerance(sequential(tenths), ref.sum, tol::summation_tolerance(n, ref, lambda)) == (n <= 1024));
}

TEST_CASE("a compensated sum's tolerance is 3u sum|x| and a second-order term, and zero where the sum is exact") {
    tol::SumReference ref;
    ref.sum = 10.0;
    ref.abs_sum = 100.5;
    ref.all_integers = false;
    const double u = tol::float32_unit_roundoff;
    CHECK(tol::compensated_summation_tolerance(1, ref, lambda) == 0.0);
    CHECK(tol::compensated_summation_tolerance(1024, ref, lambda) == Approx((3 * u + lambda * 32 * u * u) * 100.5));
    ref.all_integers = true;
    CHECK(tol::compensated_summation_tolerance(1024, ref, lambda) == 0.0);
}

TEST_CASE("a total that every element was added to in turn is told by where it stopped: a power of two from 2^24") {
    // Sequential float32 sums of inputs as the speed test's: they stop at 2^24 (values below 1) and 2^26 (1 to 3).
    const auto stalled = [](Kind kind, std::size_t n) {
        const auto input = seeded_input(n, kind, 5 + n);
        const auto ref = tol::reference_sum(input.begin(), input.end());
        const float obtained = sequential(input);
        CHECK_FALSE(accepted(input, obtained));
        return tol::stalled_total_exponent(obtained, ref);
    };
    CHECK(stalled(Kind::positive, std::size_t{1} << 26) == 24);
    CHECK(stalled(Kind::integers, std::size_t{1} << 26) == 26);

    // Every other total is not: a right one, one that is only short, one of terms of both signs, a small one.
    const auto input = seeded_input(std::size_t{1} << 20, Kind::positive, 11);
    const auto ref = tol::reference_sum(input.begin(), input.end());
    CHECK(tol::stalled_total_exponent(pairwise(input.data(), input.size()), ref) == -1);
    CHECK(tol::stalled_total_exponent(ref.sum - input.back(), ref) == -1);
    CHECK(tol::stalled_total_exponent(0x1p18, ref) == -1);  // a power of two, but below 2^24
    tol::SumReference large;
    large.sum = 0x1p27;
    large.abs_sum = 0x1p27;
    CHECK(tol::stalled_total_exponent(0x1p24, large) == 24);
    CHECK(tol::stalled_total_exponent(0x1p27, large) == -1);   // the total itself
    CHECK(tol::stalled_total_exponent(-0x1p24, large) == -1);  // the other sign
    large.abs_sum = 0x1p28;                                    // terms of both signs
    CHECK(tol::stalled_total_exponent(0x1p24, large) == -1);
}
