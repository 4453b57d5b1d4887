// Elements left out at the end of an input, the commonest off-by-one and partial-block mistakes of a reduction: the
// counts worth trying, and the explanation of each. Few counts, so that a wrong answer matches one by chance only
// rarely. Plain C++.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "explanation.hpp"

namespace cugrade::harness {

inline constexpr std::size_t smallest_block_left_out = 32;
inline constexpr std::size_t largest_block_left_out = 4096;

// 1 to 3 (an index one short), and n mod B for each power of two B from 32 to 4096 (the last, partial block);
// each below n, in increasing order.
inline std::vector<std::size_t> left_out_counts(std::size_t n) {
    std::vector<std::size_t> counts = {1, 2, 3};
    for (std::size_t block = smallest_block_left_out; block <= largest_block_left_out; block *= 2) {
        counts.push_back(n % block);
    }
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    std::erase_if(counts, [&](std::size_t k) { return k == 0 || k >= n; });
    return counts;
}

// The explanation of the last `k` of n elements left out (its evidence is the caller's): the last, partial block
// when k is n mod a power of two and more than 3, else an index one short.
inline Explanation left_out_explanation(std::size_t k, std::size_t n, const std::string& noun,
                                        const std::string& plural) {
    std::size_t block = 0;
    for (std::size_t b = smallest_block_left_out; b <= largest_block_left_out && k > 3; b *= 2) {
        if (n % b == k) {
            block = b;
            break;
        }
    }
    Explanation e;
    const std::string what = block != 0 ? "the last n mod " + std::to_string(block) + " " + plural
                             : k == 1   ? "the last " + noun
                                        : "the last " + std::to_string(k) + " " + plural;
    e.summary = what + (k == 1 && block == 0 ? " is" : " are") + " left out" +
                (block != 0 ? ": the last, partial block of " + std::to_string(block) : "");
    e.category = block != 0 ? "the last, partial block left out" : "the last " + plural + " left out";
    e.hint = block != 0 ? "round the number of blocks up, (n + " + std::to_string(block) + " - 1) / " +
                              std::to_string(block) + ", and let every thread check its index against n"
                        : "a bound one short: i < n - 1 or i + 1 < n where i < n is meant, or a count of n - 1";
    e.topic = "bounds";
    return e;
}

// "index 30" or "indices 29 to 31": the last k of n.
inline std::string last_indices(std::size_t k, std::size_t n) {
    return k == 1 ? "index " + std::to_string(n - 1)
                  : "indices " + std::to_string(n - k) + " to " + std::to_string(n - 1);
}

}  // namespace cugrade::harness
