// One case as the grader plans it and the harness runs it: its shape, its inputs, the exercise's parameters and,
// for the speed test, how to sample. Both sides include this file, and read and write the plan with these types'
// JSON forms (case_plan_json.hpp), so a field added here reaches the rubric reader, the plan file and every harness
// at once. Plain C++: no CUDA here, and no JSON, which an exercise's CUDA translation unit would parse three times.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cugrade::plan {

// A named input distribution from the rubric (docs/rubric.md).
struct Distribution {
    std::string name;
    std::string kind = "uniform";  // uniform, integers, constant, ascending, descending
    double low = 0.0;
    double high = 1.0;
    double value = 0.0;       // constant's value
    std::string min_at;       // "", "first" or "last": one value below all others placed there
    std::string max_at;       // "", "first" or "last": one value above all others placed there
    bool infinities = false;  // one -inf and one +inf at seeded places
};

// One operand's data: a distribution and the seed that draws it.
struct Input {
    Distribution distribution;
    std::uint64_t seed = 0;
};

// What the speed tiers are measured in: the submission's time over the reference's, or its bandwidth as a share of
// the copy bandwidth measured in the same run (speed_metric.hpp computes both).
enum class SpeedMetric { ratio, bandwidth };

// How a speed test samples (timing.cuh; docs/rubric.md).
struct Sampling {
    int warmup = 3;
    int min_samples = 10;
    int max_samples = 200;
    double target_rse = 0.005;  // sampling stops once both medians are known to this relative standard error
    double max_seconds = 20.0;
};

struct Timing {
    Sampling sampling;
    SpeedMetric metric = SpeedMetric::ratio;
    std::vector<double> boundaries;  // the tiers' bounds in the metric's units: sampling goes on near one
};

struct Case {
    std::string id;                    // "edges/n=31/integers", unique within the rubric
    std::vector<std::uint64_t> shape;  // {n} or {rows, cols}
    // One per operand of the exercise (exercise.yaml's `operands`); a single input serves every operand, each
    // drawn with a seed of its own (operand_seed).
    std::vector<Input> inputs;
    std::map<std::string, double> parameters;  // the exercise's parameters as the rubric sets them
    int calls = 1;
    double lambda = 8.0;  // the width of the probabilistic rounding bound (tolerance.hpp)
    bool timed = false;   // the speed test: correctness first, then timing against the reference
    Timing timing;        // when timed

    std::uint64_t size() const {
        std::uint64_t elements = 1;
        for (const auto extent : shape) {
            elements *= extent;
        }
        return elements;
    }
    double parameter(const std::string& name) const {
        const auto found = parameters.find(name);
        return found == parameters.end() ? 0.0 : found->second;
    }
};

// The seed of operand `operand` when one input serves several: the first keeps the case's seed, so an exercise of
// one operand draws the same data whatever its rubric says of operands.
inline std::uint64_t operand_seed(std::uint64_t seed, std::size_t operand) {
    return operand == 0 ? seed : seed ^ (0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(operand));
}

}  // namespace cugrade::plan
