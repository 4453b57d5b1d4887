// The order of a speed test's timed pairs: which input set each pair uses and which side (submission or reference)
// goes first. Pairs come in rounds of every (set, side first) combination once, shuffled within the round from the
// case's seed: no call can count on a fixed pattern (the reference always just before it, set 2 always after set 1),
// yet each side goes first as often as the other and every set is timed as often as the others, whenever sampling
// stops, to within a round. The same case orders its pairs the same way on every run, and the statistic (each
// side's median) does not depend on the order. Plain C++: no CUDA here.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace cugrade::harness {

struct TimedPair {
    int set = 0;
    bool submission_first = false;
};

class SampleOrder {
public:
    SampleOrder(std::uint64_t seed, int sets) : state_(seed ^ 0x5851f42d4c957f2dULL), sets_(sets < 1 ? 1 : sets) {}

    // The pair to time `index`-th (0, 1, 2, ... in turn).
    TimedPair at(std::size_t index) {
        while (index >= order_.size()) {
            add_round();
        }
        return order_[index];
    }

    std::size_t round_size() const { return 2 * static_cast<std::size_t>(sets_); }

private:
    // splitmix64: the same numbers from every compiler and library, unlike std::shuffle's distributions.
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

    void add_round() {
        std::vector<TimedPair> round;
        for (int set = 0; set < sets_; ++set) {
            round.push_back({set, false});
            round.push_back({set, true});
        }
        for (std::size_t i = round.size() - 1; i > 0; --i) {  // Fisher-Yates
            std::swap(round[i], round[next() % (i + 1)]);
        }
        order_.insert(order_.end(), round.begin(), round.end());
    }

    std::uint64_t state_;
    int sets_;
    std::vector<TimedPair> order_;
};

}  // namespace cugrade::harness
