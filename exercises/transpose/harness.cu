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

CaseOutcome run_case(const Case& c) {
    if (c.shape.size() != 2) {
        throw std::runtime_error("the transpose harness needs shapes [rows, cols]");
    }
    const std::size_t rows = c.shape[0], cols = c.shape[1];
    // Room for the largest overshoot of a last tile of 32 along either side.
    const std::size_t guard = 32 * (rows + cols) + 1024;
    DeviceBuffer<float> input(rows * cols);
    DeviceBuffer<float> buffer(guard + rows * cols + guard);
    float* output = buffer.get() + guard;
    generate(input.get(), rows * cols, c.input, c.seed);
    const std::vector<float> host_input = input.to_host();

    return run_calls(
        c, &transpose, &cugrade_reference_transpose,
        [&](auto entry, cudaStream_t stream) { entry(input.get(), rows, cols, output, stream); },
        [&] { poison(buffer.get(), buffer.size()); },
        [&] { return check_transpose(buffer.to_host(), host_input, rows, cols, guard); },
        2.0 * static_cast<double>(rows * cols) * sizeof(float));
}

}  // namespace

int main(int argc, char** argv) { return cugrade::harness::run_harness(argc, argv, run_case); }
