// The transpose harness: a seeded rows x cols input, poisoned guard regions on both sides of the output, and an exact
// check of every element and every guard against the input, on the GPU.
#include <algorithm>
#include <sstream>
#include <string>

#include "harness.cuh"
#include "transpose.h"

// The instructor's reference, linked into this program under its own name and made local by the grader.
extern "C" decltype(transpose) cugrade_reference_transpose;

namespace {

using namespace cugrade::harness;

// What the comparison of an output with its input's transpose found, counted on the GPU.
struct TransposeFindings {
    unsigned long long written_before = 0;  // guard elements before the output that are no longer poison
    unsigned long long written_after = 0;
    unsigned long long wrong = 0;
    unsigned long long first_wrong = ~0ull;  // the lowest output index that is wrong
};

// `buffer` holds guard, output, guard. Each thread counts on its own and adds its counts once, so that an output
// wrong everywhere costs no more than one right everywhere.
__global__ void compare_transpose_kernel(const float* input, const float* buffer, std::size_t rows, std::size_t cols,
                                         std::size_t guard, TransposeFindings* findings) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t first_thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::size_t count = rows * cols;
    const auto written = [](float value) { return __float_as_uint(value) != poison_bits; };
    unsigned long long before = 0, after = 0, wrong = 0, first_wrong = ~0ull;
    for (std::size_t i = first_thread; i < guard; i += stride) {
        before += written(buffer[i]);
        after += written(buffer[guard + count + i]);
    }
    const float* output = buffer + guard;
    for (std::size_t i = first_thread; i < count; i += stride) {
        const std::size_t x = i / rows, y = i % rows;
        if (__float_as_uint(output[i]) != __float_as_uint(input[y * cols + x])) {
            first_wrong = wrong++ == 0 ? i : first_wrong;
        }
    }
    if (before + after > 0) {
        atomicAdd(&findings->written_before, before);
        atomicAdd(&findings->written_after, after);
    }
    if (wrong > 0) {
        atomicAdd(&findings->wrong, wrong);
        atomicMin(&findings->first_wrong, first_wrong);
    }
}

float element(const float* device_pointer) {
    float value = 0.0f;
    CUGRADE_CUDA_CHECK(cudaMemcpy(&value, device_pointer, sizeof value, cudaMemcpyDeviceToHost));
    return value;
}

// Says what is wrong: writes outside the output first, then wrong elements.
std::string check_transpose(const float* input, const DeviceBuffer<float>& buffer, std::size_t rows, std::size_t cols,
                            std::size_t guard) {
    DeviceBuffer<TransposeFindings> counted(1);
    const TransposeFindings none;
    CUGRADE_CUDA_CHECK(cudaMemcpy(counted.get(), &none, sizeof none, cudaMemcpyHostToDevice));
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((rows * cols + guard + 255) / 256, 4096));
    compare_transpose_kernel<<<blocks, 256>>>(input, buffer.get(), rows, cols, guard, counted.get());
    CUGRADE_CUDA_CHECK(cudaGetLastError());
    const TransposeFindings findings = counted.to_host()[0];

    std::ostringstream detail;
    detail << rows << "x" << cols << ": ";
    if (findings.written_before + findings.written_after > 0) {
        detail << "wrote outside the output: " << findings.written_before << " elements before its start, "
               << findings.written_after << " past its end (check the bounds of the last tile)";
        return detail.str();
    }
    if (findings.wrong == 0) {
        return "";
    }
    const std::size_t first = findings.first_wrong;
    const std::size_t x = first / rows, y = first % rows;
    const float expected = element(input + y * cols + x);
    const float obtained = element(buffer.get() + guard + first);
    detail << findings.wrong << " of " << rows * cols << " elements wrong; the first is output[" << x << "][" << y
           << "]: expected " << describe_number(expected) << " (input[" << y << "][" << x << "]), got "
           << describe_number(obtained) << (is_poison(obtained) ? " (never written)" : "");
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
    // Untimed calls are checked in full, guards included; timed calls are spot-checked.
    calls.check = [&](int v) { return check_transpose(inputs[v]->get(), buffer, rows, cols, guard); };
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
