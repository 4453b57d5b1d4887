// Canaries and hidden seeds: the values a large case hides in its input (canaries.hpp) and the grading's secret in its
// seeds (rubric.cpp). A correct float32 sum of an input drawn as the harness draws it stays within its tolerance, a
// sampled one does not, and the same secret always draws the same case.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "canaries.hpp"
#include "catch.hpp"
#include "course/rubric.hpp"
#include "seed_mix.hpp"
#include "tolerance.hpp"

namespace {

namespace canary = cugrade::canary;
namespace tol = cugrade::tolerance;
using cugrade::plan::Distribution;

Distribution uniform(double low, double high) {
    Distribution d;
    d.kind = "uniform";
    d.low = low;
    d.high = high;
    return d;
}

Distribution integers(double low, double high) {
    Distribution d = uniform(low, high);
    d.kind = "integers";
    return d;
}

// The input as the harness draws it (seeded_input.cuh's uniform kind): the range scaled, then the canaries placed.
std::vector<float> drawn_input(std::uint64_t n, const Distribution& d, std::uint64_t seed, const canary::Draw& draw) {
    const float low = static_cast<float>(d.low * draw.scale);
    const float high = static_cast<float>(d.high * draw.scale);
    std::vector<float> x(n);
    for (std::uint64_t i = 0; i < n; ++i) {
        x[i] = low + cugrade::plan::unit_float(seed, i) * (high - low);
    }
    for (const canary::Canary& c : draw.canaries) {
        x[c.index] = c.value;
    }
    return x;
}

tol::SumReference exact_sum(const std::vector<float>& x) { return tol::reference_sum(x.begin(), x.end()); }

// One float per thread over a grid-stride loop, then the threads' sums in order: a one-block kernel's order.
float per_thread_sum(const std::vector<float>& x, std::size_t threads) {
    std::vector<float> partial(threads, 0.0f);
    for (std::size_t i = 0; i < x.size(); ++i) {
        partial[i % threads] += x[i];
    }
    float total = 0.0f;
    for (const float p : partial) {
        total += p;
    }
    return total;
}

// One element in `stride`, scaled up: what a sampling submission returns.
float sampled_sum(const std::vector<float>& x, std::size_t stride, std::size_t offset) {
    float total = 0.0f;
    for (std::size_t i = offset; i < x.size(); i += stride) {
        total += x[i];
    }
    return total * static_cast<float>(stride);
}

}  // namespace

TEST_CASE("canaries start at the threshold, in every mode but none", "[canaries]") {
    const Distribution d = uniform(0, 1);
    CHECK(canary::draw(canary::Mode::total, canary::threshold - 1, d, 1, 7, 7).canaries.empty());
    CHECK(canary::draw(canary::Mode::total, canary::threshold - 1, d, 1, 7, 7).scale == 1.0);
    CHECK(canary::draw(canary::Mode::none, std::uint64_t{1} << 28, d, 1, 7, 7).canaries.empty());
    CHECK(canary::draw(canary::Mode::total, canary::threshold, d, 1, 7, 7).canaries.size() == canary::total_count);
    CHECK(canary::draw(canary::Mode::extremes, canary::threshold, d, 1, 7, 7).canaries.size() == 2);
}

TEST_CASE("total canaries are of one sign, at different places in the second half", "[canaries]") {
    const std::uint64_t n = std::uint64_t{1} << 28;
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
        const Distribution d = seed % 2 ? uniform(0, 1) : uniform(-1, 1);
        const canary::Draw draw = canary::draw(canary::Mode::total, n, d, 1, seed, seed);
        REQUIRE(draw.canaries.size() == canary::total_count);
        std::set<std::uint64_t> places;
        for (const canary::Canary& c : draw.canaries) {
            places.insert(c.index);
            CHECK(c.index >= n / 2);
            CHECK(c.index < n - 1);
            CHECK((c.value > 0) == (draw.canaries[0].value > 0));
            const double share = std::fabs(c.value) / (static_cast<double>(n) * draw.scale);
            CHECK(share >= canary::total_share * (1 - 1.0 / 128));
            CHECK(share <= 2 * canary::total_share * (1 + 1.0 / 128));
        }
        CHECK(places.size() == canary::total_count);
        if (seed % 2) {
            CHECK(draw.canaries[0].value > 0);  // a positive range's canaries add to it
        }
    }
}

TEST_CASE("the range is scaled by 2, 4 or 8, except for integers", "[canaries]") {
    const std::uint64_t n = std::uint64_t{1} << 22;
    std::set<double> scales;
    for (std::uint64_t seed = 1; seed <= 100; ++seed) {
        scales.insert(canary::range_scale(canary::Mode::total, n, uniform(0, 1), seed));
        CHECK(canary::range_scale(canary::Mode::total, n, integers(1, 3), seed) == 1.0);
        CHECK(canary::range_scale(canary::Mode::total, canary::threshold - 1, uniform(0, 1), seed) == 1.0);
    }
    CHECK(scales == std::set<double>{2.0, 4.0, 8.0});
}

TEST_CASE("integer canaries are integers", "[canaries]") {
    for (const std::uint64_t n : {std::uint64_t{1} << 20, std::uint64_t{4194301}, std::uint64_t{1} << 28}) {
        for (const std::size_t operands : {std::size_t{1}, std::size_t{2}}) {
            for (const canary::Canary& c :
                 canary::draw(canary::Mode::total, n, integers(1, 3), operands, 11, 12).canaries) {
                CHECK(std::nearbyint(c.value) == c.value);
            }
        }
    }
}

TEST_CASE("the same seed draws the same canaries, another seed others", "[canaries]") {
    const std::uint64_t n = std::uint64_t{1} << 26;
    const canary::Draw once = canary::draw(canary::Mode::total, n, uniform(0, 1), 1, 42, 43);
    const canary::Draw again = canary::draw(canary::Mode::total, n, uniform(0, 1), 1, 42, 43);
    const canary::Draw other = canary::draw(canary::Mode::total, n, uniform(0, 1), 1, 44, 45);
    for (std::size_t k = 0; k < once.canaries.size(); ++k) {
        CHECK(once.canaries[k].index == again.canaries[k].index);
        CHECK(once.canaries[k].value == again.canaries[k].value);
        CHECK(once.canaries[k].index != other.canaries[k].index);
    }
}

TEST_CASE("a dot product's canaries share their places in both operands", "[canaries]") {
    const std::uint64_t n = std::uint64_t{1} << 28;
    const canary::Draw a = canary::draw(canary::Mode::total, n, uniform(0, 1), 2, 101, 101);
    const canary::Draw b = canary::draw(canary::Mode::total, n, uniform(-1, 1), 2, 202, 101);
    double products = 0.0;
    for (std::size_t k = 0; k < a.canaries.size(); ++k) {
        CHECK(a.canaries[k].index == b.canaries[k].index);
        const double product = static_cast<double>(a.canaries[k].value) * b.canaries[k].value;
        CHECK((product > 0) == (static_cast<double>(a.canaries[0].value) * b.canaries[0].value > 0));
        products += std::fabs(product);
    }
    // Sum |a b| without the canaries is at most n times the largest |a| times the largest |b|.
    const double rest = static_cast<double>(n) * a.scale * b.scale;
    const tol::SumReference reference{0.0, rest + products, false};
    CHECK(products > 4 * tol::dot_tolerance(n, reference, 8.0));
}

TEST_CASE("a total that stalled at a power of two gains the canaries exactly", "[canaries]") {
    for (std::uint64_t seed = 1; seed <= 100; ++seed) {
        const Distribution d = seed % 2 ? uniform(0, 1) : integers(1, 3);
        const canary::Draw draw = canary::draw(canary::Mode::total, std::uint64_t{1} << 28, d, 1, seed, seed);
        const double stall = std::ldexp(draw.scale, d.kind == "integers" ? 26 : 24);
        float total = static_cast<float>(stall);
        for (const canary::Canary& c : draw.canaries) {
            total += c.value;
        }
        CHECK(static_cast<double>(total) == stall + canary::canary_total(draw.canaries));
    }
}

TEST_CASE("with canaries a correct float32 sum passes and a sampled one fails", "[canaries]") {
    const std::uint64_t n = std::uint64_t{1} << 22;
    for (const Distribution& d : {uniform(0, 1), uniform(-1, 1)}) {
        for (std::uint64_t seed = 1; seed <= 3; ++seed) {
            const canary::Draw draw = canary::draw(canary::Mode::total, n, d, 1, seed, seed);
            const std::vector<float> x = drawn_input(n, d, seed, draw);
            const tol::SumReference reference = exact_sum(x);
            const double tolerance = tol::summation_tolerance(n, reference, 8.0);
            CHECK(tol::within_tolerance(per_thread_sum(x, 256), reference.sum, tolerance));
            CHECK(tol::within_tolerance(per_thread_sum(x, 65536), reference.sum, tolerance));
            for (std::size_t offset = 0; offset < 16; ++offset) {
                CHECK_FALSE(tol::within_tolerance(sampled_sum(x, 16, offset), reference.sum, tolerance));
            }
        }
    }
}

TEST_CASE("extreme canaries lie outside the range and keep its sign", "[canaries]") {
    const std::uint64_t n = std::uint64_t{1} << 28;
    for (std::uint64_t seed = 1; seed <= 100; ++seed) {
        for (const Distribution& d : {uniform(-1, 1), uniform(-2, -1), uniform(1, 2)}) {
            const canary::Draw draw = canary::draw(canary::Mode::extremes, n, d, 1, seed, seed + 1);
            const canary::Range range = canary::scaled_range(d, draw.scale);
            REQUIRE(draw.canaries.size() == 2);
            const float min = draw.canaries[0].value;
            const float max = draw.canaries[1].value;
            CHECK(min < range.low);
            CHECK(max > range.high);
            CHECK((min > 0) == (range.low > 0));
            CHECK((max < 0) == (range.high < 0));
            CHECK(min != static_cast<float>(d.low));
            CHECK(max != static_cast<float>(d.high));
            CHECK(draw.canaries[0].index != draw.canaries[1].index);
            CHECK(draw.canaries[0].index > 0);
            CHECK(draw.canaries[1].index < n - 1);
        }
    }
}

TEST_CASE("extreme canaries take the places a rubric plants its extremes at", "[canaries]") {
    const std::uint64_t n = 4194301;
    Distribution d = uniform(-1, 1);
    d.max_at = "last";
    d.min_at = "first";
    const canary::Draw draw = canary::draw(canary::Mode::extremes, n, d, 1, 5, 5);
    CHECK(draw.replaces_planted);
    CHECK(draw.canaries[0].index == 0);
    CHECK(draw.canaries[1].index == n - 1);
}

TEST_CASE("a grading's secret changes the seeds of hidden and timed cases only", "[canaries][rubric]") {
    std::vector<cugrade::CasePlan> cases(3);
    cases[0].visibility = cugrade::Visibility::visible;
    cases[1].visibility = cugrade::Visibility::hidden;
    cases[2].visibility = cugrade::Visibility::visible;
    cases[2].timed = true;
    for (std::size_t k = 0; k < cases.size(); ++k) {
        cases[k].inputs = {{{}, 100 + k}, {{}, 200 + k}};
    }
    std::vector<cugrade::CasePlan> once = cases;
    std::vector<cugrade::CasePlan> again = cases;
    std::vector<cugrade::CasePlan> other = cases;
    std::vector<cugrade::CasePlan> none = cases;
    cugrade::hide_seeds(once, 0x1234);
    cugrade::hide_seeds(again, 0x1234);
    cugrade::hide_seeds(other, 0x1235);
    cugrade::hide_seeds(none, 0);
    for (std::size_t k = 0; k < cases.size(); ++k) {
        for (std::size_t operand = 0; operand < 2; ++operand) {
            const std::uint64_t public_seed = cases[k].inputs[operand].seed;
            CHECK(once[k].inputs[operand].seed == again[k].inputs[operand].seed);
            CHECK(none[k].inputs[operand].seed == public_seed);
            if (k == 0) {
                CHECK(once[k].inputs[operand].seed == public_seed);
            } else {
                CHECK(once[k].inputs[operand].seed != public_seed);
                CHECK(once[k].inputs[operand].seed != other[k].inputs[operand].seed);
            }
        }
    }
}

TEST_CASE("each grading draws a secret of its own", "[canaries][rubric]") {
    const std::uint64_t first = cugrade::draw_grading_secret();
    const std::uint64_t second = cugrade::draw_grading_secret();
    CHECK(first != 0);
    CHECK(first != second);
}
