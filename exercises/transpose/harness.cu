// The transpose harness: a seeded rows x cols input, its transpose computed on the host, poisoned guard regions on
// both sides of the output, and an exact check of every element and every guard.
#include <cstring>
#include <sstream>
#include <string>

#include "harness.cuh"
#include "transpose.h"

// The instructor's reference, linked into this program under its own name and made local by the grader.
extern "C" decltype(transpose) cugrade_reference_transpose;

namespace {

using namespace cugrade::harness;

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// `buffer` holds guard, output, guard. Says what is wrong: writes outside the output first, then wrong elements.
std::string check_transpose(const std::vector<float>& buffer, const std::vector<float>& input, std::size_t rows,
                            std::size_t cols, std::size_t guard) {
    std::ostringstream detail;
    detail << rows << "x" << cols << ": ";
    std::size_t before = 0, after = 0;
    for (std::size_t i = 0; i < guard; ++i) {
        before += is_poison(buffer[i]) ? 0 : 1;
        after += is_poison(buffer[guard + rows * cols + i]) ? 0 : 1;
    }
    if (before + after > 0) {
        detail << "wrote outside the output: " << before << " elements before its start, " << after
               << " past its end (check the bounds of the last tile)";
        return detail.str();
    }
    const float* output = buffer.data() + guard;
    std::size_t wrong = 0;
    std::size_t first = 0;
    for (std::size_t x = 0; x < cols; ++x) {
        for (std::size_t y = 0; y < rows; ++y) {
            if (!same_bits(output[x * rows + y], input[y * cols + x]) && wrong++ == 0) {
                first = x * rows + y;
            }
        }
    }
    if (wrong == 0) {
        return "";
    }
    const std::size_t x = first / rows, y = first % rows;
    detail << wrong << " of " << rows * cols << " elements wrong; the first is output[" << x << "][" << y
           << "]: expected " << describe_number(input[y * cols + x]) << " (input[" << y << "][" << x << "]), got "
           << describe_number(output[first]) << (is_poison(output[first]) ? " (never written)" : "");
    return detail.str();
}

// Compares `samples` seeded positions of the output with the input, on the GPU: a timed call is checked without
// copying a gigabyte back each time.
__global__ void spot_check_kernel(const float* input, const float* output, std::size_t rows, std::size_t cols,
                                  std::uint64_t seed, unsigned samples, unsigned* mismatches) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < samples; i += blockDim.x * gridDim.x) {
        const std::size_t position = mix64(seed + i) % (rows * cols);
        const std::size_t x = position / rows, y = position % rows;
        if (__float_as_uint(output[position]) != __float_as_uint(input[y * cols + x])) {
            atomicAdd(mismatches, 1u);
        }
    }
}

CaseOutcome run_case(const Case& c) {
    if (c.shape.size() != 2) {
        throw std::runtime_error("the transpose harness needs shapes [rows, cols]");
    }
    const std::size_t rows = c.shape[0], cols = c.shape[1];
    // Room for the largest overshoot of a last tile of 32 along either side.
    const std::size_t guard = 32 * (rows + cols) + 1024;
    const auto inputs = seeded_inputs(c);
    const std::vector<float> first_input = inputs[0]->to_host();
    DeviceBuffer<float> buffer(guard + rows * cols + guard);
    float* output = buffer.get() + guard;
    DeviceBuffer<unsigned> mismatches(1);
    std::uint64_t spot_seed = c.seed;

    CaseCalls<Entry<decltype(transpose)>> calls;
    calls.submission = submission_entry<decltype(transpose)>();
    calls.reference = &cugrade_reference_transpose;
    calls.variants = static_cast<int>(inputs.size());
    calls.invoke = [&](auto entry, cudaStream_t stream, int v) { entry(inputs[v]->get(), rows, cols, output, stream); };
    calls.poison = [&] { poison(buffer.get(), buffer.size()); };
    // Untimed calls use the first input and are checked in full, guards included; timed calls are spot-checked.
    calls.check = [&](int) { return check_transpose(buffer.to_host(), first_input, rows, cols, guard); };
    calls.timed_check = [&](int v) -> std::string {
        constexpr unsigned samples = 1 << 16;
        CUGRADE_CUDA_CHECK(cudaMemset(mismatches.get(), 0, sizeof(unsigned)));
        spot_check_kernel<<<64, 256>>>(inputs[v]->get(), output, rows, cols, ++spot_seed, samples, mismatches.get());
        CUGRADE_CUDA_CHECK(cudaGetLastError());
        const unsigned wrong = mismatches.to_host()[0];
        return wrong == 0 ? "" : std::to_string(wrong) + " of " + std::to_string(samples) + " elements checked are wrong";
    };
    calls.bytes = 2.0 * static_cast<double>(rows * cols) * sizeof(float);
    for (const auto& input : inputs) {
        calls.inputs.push_back(input.get());
    }
    return run_calls(c, calls);
}

}  // namespace

int main(int argc, char** argv) { return cugrade::harness::run_harness(argc, argv, run_case); }
