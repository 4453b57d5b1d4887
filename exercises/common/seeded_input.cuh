// A case's inputs, drawn on the GPU from a counter-based hash, so that any element can be recomputed from its seed
// and index: one buffer per operand, and for the speed test three sets of different contents, which the timed calls
// rotate through. Before each timed call its set is drawn again from a fresh seed (redraw), so that no answer a
// submission computed in an earlier call, and kept, is right for the call being timed.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include "canaries.hpp"
#include "case_plan.hpp"
#include "channel.hpp"
#include "cuda_check.cuh"
#include "run_mode.hpp"

namespace cugrade::harness {

using plan::mix64;
using plan::unit_float;

enum class Kind : int { uniform, integers, constant, ascending, descending };

inline Kind kind_of(const std::string& name) {
    if (name == "integers") return Kind::integers;
    if (name == "constant") return Kind::constant;
    if (name == "ascending") return Kind::ascending;
    if (name == "descending") return Kind::descending;
    if (name == "uniform") return Kind::uniform;
    throw std::runtime_error("unknown input kind '" + name + "'");
}

__global__ void generate_kernel(float* out, std::size_t n, std::uint64_t seed, Kind kind, float low, float high,
                                float value) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const double step = n > 1 ? (static_cast<double>(high) - low) / static_cast<double>(n - 1) : 0.0;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float u = unit_float(seed, i);
        switch (kind) {
            case Kind::uniform: out[i] = low + u * (high - low); break;
            case Kind::integers: out[i] = fminf(high, floorf(low + u * (high - low + 1.0f))); break;
            case Kind::constant: out[i] = value; break;
            case Kind::ascending: out[i] = static_cast<float>(low + step * static_cast<double>(i)); break;
            case Kind::descending: out[i] = static_cast<float>(high - step * static_cast<double>(i)); break;
        }
    }
}

__global__ void place_kernel(float* at, float value) { *at = value; }

// A case's canaries, passed by value: one launch places them all.
struct CanaryValues {
    std::uint64_t index[canary::most];
    float value[canary::most];
    unsigned count;
};

__global__ void place_canaries_kernel(float* out, CanaryValues canaries) {
    if (threadIdx.x < canaries.count) {
        out[canaries.index[threadIdx.x]] = canaries.value[threadIdx.x];
    }
}

inline void place_canaries(float* out, const std::vector<canary::Canary>& canaries) {
    if (canaries.empty()) {
        return;
    }
    CanaryValues values{};
    values.count = static_cast<unsigned>(std::min<std::size_t>(canaries.size(), canary::most));
    for (unsigned k = 0; k < values.count; ++k) {
        values.index[k] = canaries[k].index;
        values.value[k] = canaries[k].value;
    }
    place_canaries_kernel<<<1, canary::most>>>(out, values);
    CUGRADE_CUDA_CHECK(cudaGetLastError());
}

// One element written by a kernel, not a copy from the host: a copy from pageable memory waits for the GPU first.
inline void place(float* at, float value) {
    place_kernel<<<1, 1>>>(at, value);
    CUGRADE_CUDA_CHECK(cudaGetLastError());
}

// Fills out[0, n) from the distribution, its range scaled as `canaries` says, then places the canaries and the
// planted extremes: min_at and max_at put one value below (above) every other (the canaries' own where they replace
// them), infinities put -inf and +inf at seeded places. Asynchronous, on the legacy default stream, which every later
// use of the input waits for.
inline void generate(float* out, std::size_t n, const plan::Distribution& input, std::uint64_t seed,
                     const canary::Draw& canaries = {}) {
    if (n == 0) {
        return;
    }
    const double scale = canaries.scale;
    generate_kernel<<<grid_for(n), 256>>>(out, n, seed, kind_of(input.kind), static_cast<float>(input.low * scale),
                                          static_cast<float>(input.high * scale),
                                          static_cast<float>(input.value * scale));
    CUGRADE_CUDA_CHECK(cudaGetLastError());
    place_canaries(out, canaries.canaries);
    const float span = static_cast<float>(std::max(1.0, input.high - input.low));
    if (!input.min_at.empty() && !canaries.replaces_planted) {
        place(out + canary::planted_index(input.min_at, n), static_cast<float>(input.low) - span);
    }
    if (!input.max_at.empty() && !canaries.replaces_planted) {
        place(out + canary::planted_index(input.max_at, n), static_cast<float>(input.high) + span);
    }
    if (input.infinities) {
        place(out + mix64(seed + 1) % n, -INFINITY);
        if (n > 1) {
            const std::size_t minus = mix64(seed + 1) % n;
            place(out + (minus + 1 + mix64(seed + 2) % (n - 1)) % n, INFINITY);
        }
    }
}

// The inputs of one case: `operands` buffers of c.size() elements per set, one set, or three for the speed test
// (set v draws each operand with its seed + v; drawn again, with a seed mixed from that and the draw's number). One
// distribution in the plan serves every operand, each with a seed of its own (plan::operand_seed). `canaries` says
// what a large case's canaries are (canaries.hpp); every set and every draw has canaries of its own.
class SeededInputs {
public:
    SeededInputs(const plan::Case& c, std::size_t operands, canary::Mode canaries = canary::Mode::none)
        : SeededInputs(c, std::vector<std::size_t>(operands, static_cast<std::size_t>(c.size())), canaries) {}

    // Operands of different sizes (a matrix product's m x k and k x n), one buffer of sizes[k] elements each.
    SeededInputs(const plan::Case& c, std::vector<std::size_t> sizes, canary::Mode canaries = canary::Mode::none)
        : case_(c), operands_(sizes.size()), sizes_(std::move(sizes)), mode_(canaries) {
        const std::size_t operands = operands_;
        if (c.inputs.size() != 1 && c.inputs.size() != operands) {
            throw std::runtime_error("case " + c.id + " gives " + std::to_string(c.inputs.size()) +
                                     " inputs; this exercise takes " + std::to_string(operands));
        }
        SharedGpu gpu;
        const int sets = c.timed && !profile_only() ? 3 : 1;
        draws_.assign(static_cast<std::size_t>(sets), 0);
        canaries_.resize(static_cast<std::size_t>(sets) * operands);
        for (int set = 0; set < sets; ++set) {
            for (std::size_t k = 0; k < operands; ++k) {
                buffers_.push_back(std::make_unique<DeviceBuffer<float>>(sizes_[k]));
            }
            draw(set);
        }
    }

    int sets() const { return static_cast<int>(draws_.size()); }
    std::size_t operands() const { return operands_; }
    const DeviceBuffer<float>& buffer(int set, std::size_t operand = 0) const {
        return *buffers_.at(static_cast<std::size_t>(set) * operands_ + operand);
    }
    const float* operator()(int set, std::size_t operand = 0) const { return buffer(set, operand).get(); }

    // Draws set `set` again, in place, from seeds no earlier draw used; whatever was derived from it (its exact
    // answer: PerInputSet) is derived again.
    void redraw(int set) {
        ++draws_.at(static_cast<std::size_t>(set));
        draw(set);
    }
    // How many times set `set` was drawn again.
    std::uint64_t draws(int set) const { return draws_.at(static_cast<std::size_t>(set)); }
    // The canaries of operand `operand` in set `set` as last drawn: none below the threshold.
    const std::vector<canary::Canary>& canaries(int set, std::size_t operand = 0) const {
        return canaries_.at(static_cast<std::size_t>(set) * operands_ + operand).canaries;
    }

private:
    std::uint64_t seed_of(int set, std::size_t k) const {
        const plan::Input& input = case_.inputs.size() == 1 ? case_.inputs[0] : case_.inputs[k];
        std::uint64_t seed = (case_.inputs.size() == 1 ? plan::operand_seed(input.seed, k) : input.seed) +
                             static_cast<std::uint64_t>(set);
        if (const std::uint64_t again = draws(set); again != 0) {
            seed = mix64(seed ^ mix64(again));
        }
        return seed;
    }

    void draw(int set) {
        // Every operand's canaries at the same places: a dot product's are products of canaries.
        const std::uint64_t place_seed = seed_of(set, 0);
        for (std::size_t k = 0; k < operands_; ++k) {
            const plan::Input& input = case_.inputs.size() == 1 ? case_.inputs[0] : case_.inputs[k];
            const std::size_t slot = static_cast<std::size_t>(set) * operands_ + k;
            const std::uint64_t seed = seed_of(set, k);
            canaries_[slot] = canary::draw(mode_, sizes_[k], input.distribution, operands_, seed, place_seed);
            generate(buffers_[slot]->get(), sizes_[k], input.distribution, seed, canaries_[slot]);
        }
    }

    plan::Case case_;
    std::size_t operands_;
    std::vector<std::size_t> sizes_;  // elements of each operand
    canary::Mode mode_;
    std::vector<canary::Draw> canaries_;  // per set and operand, as buffers_
    std::vector<std::unique_ptr<DeviceBuffer<float>>> buffers_;
    std::vector<std::uint64_t> draws_;
};

// What a harness derives from each input set (its exact answer, its tolerance), derived when first asked for and
// again after the set is drawn again.
template <class T>
class PerInputSet {
public:
    PerInputSet(const SeededInputs& inputs, std::function<T(int set)> derive)
        : inputs_(inputs), derive_(std::move(derive)), values_(static_cast<std::size_t>(inputs.sets())) {}

    const T& operator[](int set) {
        auto& slot = values_.at(static_cast<std::size_t>(set));
        if (!slot || slot->first != inputs_.draws(set)) {
            SharedGpu gpu;
            slot.emplace(inputs_.draws(set), derive_(set));
        }
        return slot->second;
    }

private:
    const SeededInputs& inputs_;
    std::function<T(int set)> derive_;
    std::vector<std::optional<std::pair<std::uint64_t, T>>> values_;
};

}  // namespace cugrade::harness
