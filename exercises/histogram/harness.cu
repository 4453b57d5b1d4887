// The histogram harness: seeded values, their exact counts computed on the GPU with the contract's histogram_bin(),
// the submission's calls, and an exact check of every bin. The counts also tell, where the numbers prove it, what a
// wrong histogram is: counts never set to 0, values at high or outside the range counted, every value one bin off,
// values counted twice, or increments lost.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "harness.cuh"
#include "histogram.h"

CUGRADE_REFERENCE(histogram);

namespace {

using namespace cugrade::harness;

// What the harness knows of one input set: the right counts, and how many values lie outside the range, by kind.
struct Expected {
    std::vector<unsigned> counts;
    unsigned long long in_range = 0;
    unsigned long long below = 0;    // x < low
    unsigned long long at_high = 0;  // x == high
    unsigned long long above = 0;    // x > high
};

struct OutsideCounts {
    unsigned long long below = 0, at_high = 0, above = 0;
};

// A shared-memory histogram per block, added once to the global one: fast enough for 2^28 values, and simple
// enough to trust.
__global__ void count_kernel(const float* values, std::size_t n, float low, float high, unsigned bins,
                             unsigned long long* counts, OutsideCounts* outside) {
    __shared__ unsigned block_counts[HISTOGRAM_MAX_BINS];
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) {
        block_counts[b] = 0;
    }
    __syncthreads();
    unsigned long long below = 0, at_high = 0, above = 0;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float x = values[i];
        const int bin = histogram_bin(x, low, high, bins);
        if (bin >= 0) {
            atomicAdd(&block_counts[bin], 1u);
        }
        below += x < low;
        at_high += x == high;
        above += x > high;
    }
    __syncthreads();
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) {
        if (block_counts[b] != 0) {
            atomicAdd(&counts[b], static_cast<unsigned long long>(block_counts[b]));
        }
    }
    if (below + at_high + above > 0) {
        atomicAdd(&outside->below, below);
        atomicAdd(&outside->at_high, at_high);
        atomicAdd(&outside->above, above);
    }
}

Expected count_on_device(const float* values, std::size_t n, float low, float high, unsigned bins) {
    DeviceBuffer<unsigned long long> counts(bins);
    DeviceBuffer<OutsideCounts> outside(1);
    CUGRADE_CUDA_CHECK(cudaMemset(counts.get(), 0, bins * sizeof(unsigned long long)));
    set_element(outside.get(), OutsideCounts{});
    count_kernel<<<grid_for(n, 1024), 256>>>(values, n, low, high, bins, counts.get(), outside.get());
    CUGRADE_CUDA_CHECK(cudaGetLastError());
    std::vector<unsigned long long> wide(bins);
    CUGRADE_CUDA_CHECK(
        cudaMemcpy(wide.data(), counts.get(), bins * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    const OutsideCounts found = read_element(outside.get());
    Expected e;
    e.counts.assign(wide.begin(), wide.end());  // n < 2^32 in every rubric: no count overflows
    for (const unsigned long long c : wide) {
        e.in_range += c;
    }
    e.below = found.below;
    e.at_high = found.at_high;
    e.above = found.above;
    return e;
}

std::vector<unsigned> read_counts(const GuardedBuffer& counts) {
    const std::vector<float> raw = counts.to_host();
    std::vector<unsigned> words(raw.size());
    std::memcpy(words.data(), raw.data(), raw.size() * sizeof(unsigned));
    return words;
}

std::string describe_count(unsigned count) {
    return count == poison_bits ? std::to_string(count) + " (never written)" : std::to_string(count);
}

std::string check_counts(const std::vector<unsigned>& got, const Expected& e, std::size_t n) {
    std::size_t wrong = 0, first = got.size();
    unsigned long long total = 0;
    for (std::size_t b = 0; b < got.size(); ++b) {
        total += got[b];
        if (got[b] != e.counts[b]) {
            first = wrong++ == 0 ? b : first;
        }
    }
    if (wrong == 0) {
        return "";
    }
    std::ostringstream detail;
    detail << "n=" << n << ", " << got.size() << (got.size() == 1 ? " bin: " : " bins: ") << wrong << " of "
           << got.size() << " counts wrong; the first is counts[" << first << "]: expected " << e.counts[first]
           << ", got " << describe_count(got[first]) << " (" << total << " counted in all, " << e.in_range
           << " values in range)";
    return detail.str();
}

// True when got and want differ exactly by `extra` in bin `bin` and nowhere else.
bool only_bin_differs_by(const std::vector<unsigned>& got, const std::vector<unsigned>& want, std::size_t bin,
                         unsigned long long extra) {
    for (std::size_t b = 0; b < got.size(); ++b) {
        const unsigned long long expected = want[b] + (b == bin ? extra : 0);
        if (got[b] != expected) {
            return false;
        }
    }
    return extra > 0;
}

std::optional<Explanation> explain_counts(const std::vector<unsigned>& got, const Expected& e) {
    const std::size_t bins = got.size();
    Explanation x;
    const auto wrote_every_bin = std::none_of(got.begin(), got.end(), [](unsigned c) { return c == poison_bits; });
    if (bins > 0 && std::all_of(got.begin(), got.end(), [&](unsigned c) { return c == poison_bits; })) {
        return std::nullopt;  // never written: the detail says so
    }
    bool not_zeroed = true;
    for (std::size_t b = 0; b < bins && not_zeroed; ++b) {
        not_zeroed = got[b] == static_cast<unsigned>(e.counts[b] + poison_bits);
    }
    if (not_zeroed) {
        x.summary = "the counts were added to without being set to 0 first: every bin is its right count plus the "
                    "garbage the grader filled it with";
        x.category = "counts not set to 0 before counting";
        x.hint = "set every bin to 0 before the kernel that counts (cudaMemsetAsync on the stream, or a kernel), or "
                 "have each bin written once, from a count that starts at 0";
        x.topic = "state";
        x.evidence.push_back("counts[0] is " + std::to_string(got[0]) + " = " + std::to_string(e.counts[0]) + " + " +
                             std::to_string(poison_bits));
        return x;
    }
    if (!wrote_every_bin) {
        return std::nullopt;
    }
    const std::size_t last = bins - 1;
    if (only_bin_differs_by(got, e.counts, last, e.at_high)) {
        x.summary = "values equal to high were counted in the last bin: the range [low, high) leaves high out";
        x.category = "values at the top edge counted";
        x.hint = "a value counts only when low <= x < high; clamping the bin to bins - 1 is for values just below "
                 "high that round up, never for high itself (histogram_bin does both)";
        x.topic = "bounds";
        x.evidence.push_back("counts[" + std::to_string(last) + "] is " + std::to_string(got[last]) + ", " +
                             std::to_string(e.at_high) + " more than its " + std::to_string(e.counts[last]) + "; " +
                             std::to_string(e.at_high) + " values equal high");
        return x;
    }
    if (only_bin_differs_by(got, e.counts, last, e.at_high + e.above) ||
        only_bin_differs_by(got, e.counts, 0, e.below)) {
        const bool top = got[last] != e.counts[last];
        x.summary = top ? "values at or above high were counted in the last bin"
                        : "values below low were counted "
                          "in the first bin";
        x.category = "values outside the range counted";
        x.hint = "values outside [low, high) are not counted: test the range before clamping the bin";
        x.topic = "bounds";
        x.evidence.push_back(std::to_string(top ? e.at_high + e.above : e.below) + " values lie " +
                             (top ? "at or above high" : "below low") + "; counts[" + std::to_string(top ? last : 0) +
                             "] is higher by as many");
        return x;
    }
    for (const int shift : {1, -1}) {
        bool shifted = bins > 1;
        for (std::size_t b = 0; b < bins && shifted; ++b) {
            const long long from = static_cast<long long>(b) - shift;
            const unsigned want = from >= 0 && from < static_cast<long long>(bins) ? e.counts[from] : 0;
            shifted = got[b] == want;
        }
        if (shifted && e.in_range > 0) {
            x.summary = std::string("every value was counted one bin too ") + (shift > 0 ? "high" : "low");
            x.category = "every value one bin off";
            x.hint = "the bin of x is floor((x - low) * bins / (high - low)): use histogram_bin(), with no + 1 or "
                     "rounding up";
            x.topic = "indexing";
            x.evidence.push_back("counts[b] holds the count of bin b " + std::string(shift > 0 ? "- 1" : "+ 1"));
            return x;
        }
    }
    unsigned long long total = 0;
    for (const unsigned c : got) {
        total += c;
    }
    const auto occupied = std::count_if(e.counts.begin(), e.counts.end(), [](unsigned c) { return c > 0; });
    if (total > e.in_range + e.below + e.at_high + e.above) {
        x.summary = "more values were counted than there are: some values were counted more than once";
        x.category = "values counted more than once";
        x.hint = "each value must be read by one thread: a grid-stride loop steps by the whole grid, "
                 "gridDim.x * blockDim.x";
        x.topic = "grid";
        x.evidence.push_back(std::to_string(total) + " counted, " +
                             std::to_string(e.in_range + e.below + e.at_high + e.above) + " values in all");
        return x;
    }
    if (total < e.in_range && occupied > 2) {
        // Observed: values went uncounted. Which of the causes lost them the counts cannot tell.
        x.summary = "fewer values were counted than the range holds, in many bins";
        x.category = "values not counted";
        x.hint = "values go uncounted when threads add to one bin at once without an atomic, when a block counts "
                 "into its copy in shared memory before every bin of it was set to 0 (a __syncthreads() missing "
                 "after the zeroing), or when the grid does not reach every value";
        x.topic = "atomics";
        std::size_t low_bins = 0;
        for (std::size_t b = 0; b < bins; ++b) {
            low_bins += got[b] < e.counts[b];
        }
        x.evidence.push_back(std::to_string(total) + " counted of " + std::to_string(e.in_range) + " in range; " +
                             std::to_string(low_bins) + " bins too low");
        return x;
    }
    if (total < e.in_range && occupied <= 2) {
        // Observed, not proven: a read, an add and a write of one bin by many threads at once lose increments, and
        // inputs that put almost every value in one bin bring it out; a grid too small to reach every value would
        // give the same totals, so the hint says both.
        x.summary = "increments were lost: fewer values were counted than the range holds, on an input whose values "
                    "all fall in one or two bins";
        x.category = "lost increments";
        x.hint = "when many threads add to one bin at once, counts[b] += 1 loses updates: use atomicAdd (on shared "
                 "memory, per block, then once per bin on the global counts); and check that the grid reaches every "
                 "value";
        x.topic = "atomics";
        x.evidence.push_back(std::to_string(total) + " counted of " + std::to_string(e.in_range) + " in range");
        return x;
    }
    return std::nullopt;
}

CaseOutcome run_case(const Case& c) {
    const std::size_t n = c.size();
    const double bins_parameter = c.parameter("bins");
    if (!(bins_parameter >= 1 && bins_parameter <= HISTOGRAM_MAX_BINS) ||
        bins_parameter != std::floor(bins_parameter)) {
        throw std::runtime_error("the histogram's bins must be a whole number from 1 to " +
                                 std::to_string(HISTOGRAM_MAX_BINS));
    }
    const auto bins = static_cast<unsigned>(bins_parameter);
    const auto low = static_cast<float>(c.parameter("low"));
    const auto high = static_cast<float>(c.parameter("high"));
    if (!(low < high)) {
        throw std::runtime_error("the histogram's range needs low < high");
    }
    SeededInputs inputs(c, 1);
    PerInputSet<Expected> expected(inputs, [&](int set) { return count_on_device(inputs(set), n, low, high, bins); });
    GuardedBuffer counts("counts", bins, 4096, "write counts[0] to counts[bins - 1] and nothing else");
    GuardedBuffer scratch("scratch", histogram_scratch_words(bins));

    CaseCalls<decltype(histogram)> calls(cugrade_reference_histogram, inputs, {"values"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set), n, low, high, bins, reinterpret_cast<unsigned*>(counts.get()),
              reinterpret_cast<unsigned*>(scratch.get()), stream);
    };
    calls.check = [&](int set) { return check_counts(read_counts(counts), expected[set], n); };
    calls.explain = [&](int set) { return explain_counts(read_counts(counts), expected[set]); };
    calls.outputs = {&counts, &scratch};
    calls.bytes = static_cast<double>(n) * sizeof(float);
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
