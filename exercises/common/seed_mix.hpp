// The one hash that turns seeds into numbers: the harness draws every input element with it (seeded_input.cuh), the
// canaries' places and values (canaries.hpp), and the grader mixes a grading's secret into a case's seed with it
// (rubric.cpp). Plain C++ that nvcc also compiles for the device.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define CUGRADE_SEED_MIX_HOST_DEVICE __host__ __device__
#else
#define CUGRADE_SEED_MIX_HOST_DEVICE
#endif

namespace cugrade::plan {

// SplitMix64's finaliser: every input bit moves about half the output bits.
CUGRADE_SEED_MIX_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// A uniform number in [0, 1) with 24 random bits.
CUGRADE_SEED_MIX_HOST_DEVICE inline float unit_float(std::uint64_t seed, std::uint64_t index) {
    return static_cast<float>(mix64(seed ^ mix64(index)) >> 40) * 0x1p-24f;
}

// A case's seed with a grading's secret mixed in: without the secret, knowing the public seed tells nothing of the
// result. A secret of 0 leaves the seed as it is (no secret: the public seed draws the case).
inline std::uint64_t secret_seed(std::uint64_t seed, std::uint64_t secret) {
    return secret == 0 ? seed : mix64(seed ^ mix64(secret ^ 0x5ec2e7c0ffee5eedull));
}

}  // namespace cugrade::plan
