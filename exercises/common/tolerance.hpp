// Tolerance models shared by the harnesses (which check results, on the host and on the GPU) and the grader's tests
// (which check the models). Plain C++ that nvcc can also compile for the device.
#pragma once

#include <cmath>
#include <cstddef>

#ifdef __CUDACC__
#define CUGRADE_HOST_DEVICE __host__ __device__
#else
#define CUGRADE_HOST_DEVICE
#endif

namespace cugrade::tolerance {

// Unit roundoff of float32 (round to nearest): every float32 addition a + b returns (a + b)(1 + d) with |d| <= u.
inline constexpr double float32_unit_roundoff = 0x1p-24;

// Integers up to 2^24 in magnitude are exactly representable in float32.
inline constexpr double float32_exact_integer_limit = 0x1p24;

// What a harness knows of an input before it checks a sum of it.
struct SumReference {
    double sum = 0.0;      // the sum in double precision with compensation: exact for every rubric size
    double abs_sum = 0.0;  // the sum of |x|, which sets the condition of the sum
    bool all_integers = true;
};

// Neumaier's compensated summation in double. For float32 inputs and n below 2^29 its error is far below
// float32's resolution, so it serves as the exact sum.
// The harness sums on the GPU in double without compensation, in any order: an error of at most
// (n-1) 2^-53 sum|x|, that is (n-1) 2^-29 u sum|x|. Integer sums up to 2^53 come out exact, so an exact case stays
// exact. For any other the error is a tiny share of summation_tolerance(): 2^-29 of gamma_{n-1} sum|x| when
// n-1 <= lambda^2, else sqrt(n-1) 2^-29 / lambda of the probabilistic bound, at most 2^-14.5 for the rubric's
// lambda >= 1 and n <= 2^29.
template <class Iterator>
SumReference reference_sum(Iterator first, Iterator last) {
    SumReference ref;
    double compensation = 0.0;
    for (; first != last; ++first) {
        const double x = static_cast<double>(*first);
        const double t = ref.sum + x;
        compensation += std::abs(ref.sum) >= std::abs(x) ? (ref.sum - t) + x : (x - t) + ref.sum;
        ref.sum = t;
        ref.abs_sum += std::abs(x);
        ref.all_integers = ref.all_integers && std::nearbyint(x) == x;
    }
    ref.sum += compensation;
    return ref;
}

// When every input is an integer and sum |x| <= 2^24, every partial sum in every order is an integer no larger
// than 2^24 in magnitude, hence exact in float32: any correct float32 summation returns the exact sum.
CUGRADE_HOST_DEVICE inline bool exactly_summable_in_float32(const SumReference& ref) {
    return ref.all_integers && ref.abs_sum <= float32_exact_integer_limit;
}

// The deterministic bound alone: how far any float32 sum of n values, in any order, can be off, whatever its rounding
// errors do. Inputs whose errors all lean one way (0.1 repeated) can pass the probabilistic bound, but never this.
CUGRADE_HOST_DEVICE inline double worst_summation_error(std::size_t n, const SumReference& ref) {
    if (n <= 1 || exactly_summable_in_float32(ref)) {
        return 0.0;
    }
    const double ku = static_cast<double>(n - 1) * float32_unit_roundoff;
    return ku < 1.0 ? ku / (1.0 - ku) * ref.abs_sum : HUGE_VAL;
}

// How far a correct float32 sum of n values may lie from the exact sum, in any summation order.
//   - Deterministic bound (Higham, Accuracy and Stability, 4.2): gamma_{n-1} * sum|x|, gamma_k = k u / (1 - k u).
//   - Probabilistic bound (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019): lambda * sqrt(n-1) * u * sum|x|,
//     exceeded with probability at most about 2 exp(-lambda^2 / 2) when rounding errors are independent.
// The tolerance is the smaller of the two, and zero where the sum is exact in every order.
// A prefix sum (scan) is a sum of its first n values in an order of the scan's own: each element's tolerance is this
// one, for its own n and prefix.
CUGRADE_HOST_DEVICE inline double summation_tolerance(std::size_t n, const SumReference& ref, double lambda) {
    if (n <= 1 || exactly_summable_in_float32(ref)) {
        return 0.0;
    }
    const double probabilistic = lambda * std::sqrt(static_cast<double>(n - 1)) * float32_unit_roundoff;
    return std::fmin(worst_summation_error(n, ref), probabilistic * ref.abs_sum);
}

// A dot product in float32: each product a_i b_i rounded once (by at most u |a_i b_i|; not at all in a fused
// multiply-add), then the n products summed. `products` describes the exact products; integer products whose
// absolute sum stays within 2^24 are exact in every order, as for a sum.
CUGRADE_HOST_DEVICE inline double dot_tolerance(std::size_t n, const SumReference& products, double lambda) {
    if (exactly_summable_in_float32(products)) {
        return 0.0;
    }
    return summation_tolerance(n, products, lambda) + float32_unit_roundoff * products.abs_sum;
}

// A compensated float32 sum (Kahan's or Neumaier's, in each thread and in every step that combines the threads'
// sums) lies within (2u + O(n u^2)) sum|x| of the exact sum (Higham, 4.3), and its rounding to float32 adds
// u |sum|: the tolerance is 3u sum|x| plus lambda sqrt(n) u^2 sum|x| for the second-order term, whose rounding errors
// behave like a random walk. A plain float32 sum of n values can be off by many times that, and is where inputs make
// its rounding errors all lean one way (every value 0.1: each addition to a larger running sum drops the same low
// bits). Zero where the sum is exact in every order.
CUGRADE_HOST_DEVICE inline double compensated_summation_tolerance(std::size_t n, const SumReference& ref,
                                                                  double lambda) {
    if (n <= 1 || exactly_summable_in_float32(ref)) {
        return 0.0;
    }
    const double u = float32_unit_roundoff;
    return (3.0 * u + lambda * std::sqrt(static_cast<double>(n)) * u * u) * ref.abs_sum;
}

CUGRADE_HOST_DEVICE inline bool within_tolerance(double obtained, double expected, double tolerance) {
    return std::isfinite(obtained) && std::fabs(obtained - expected) <= tolerance;
}

// A float that every term is added to in turn (an atomicAdd per element, one thread's loop) stops growing where floats
// are more than twice the largest term apart, and with terms of one sign it ends on a power of two: 2^24 for terms
// below 1, 2^26 for terms up to 3. That power's exponent when `obtained` is one, 2^24 or above and short of the
// total; -1 otherwise. Another wrong total is such a power by chance only rarely.
inline int stalled_total_exponent(double obtained, const SumReference& ref) {
    const bool one_sign = ref.abs_sum <= std::fabs(ref.sum) * (1.0 + 1e-9);
    int exponent = 0;
    const double fraction = std::frexp(std::fabs(obtained), &exponent);  // |obtained| = fraction 2^exponent
    const bool power_of_two = fraction == 0.5;
    if (!one_sign || !power_of_two || exponent - 1 < 24 || std::fabs(obtained) >= std::fabs(ref.sum) ||
        (obtained < 0) != (ref.sum < 0)) {
        return -1;
    }
    return exponent - 1;
}

}  // namespace cugrade::tolerance
