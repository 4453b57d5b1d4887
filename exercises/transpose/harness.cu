// The transpose harness: a seeded rows x cols input, poisoned guard regions on both sides of the output, and an exact
// check of every element and every guard against the input, on the GPU.
#include <algorithm>
#include <sstream>
#include <string>

#include "harness.cuh"
#include "matrix_mismatches.cuh"
#include "transpose.h"

CUGRADE_REFERENCE(transpose);

namespace {

using namespace cugrade::harness;

// What the comparison of an output with its input's transpose found, counted on the GPU.
struct TransposeFindings {
    unsigned long long wrong = 0;
    unsigned long long first_wrong = ~0ull;  // the lowest output index that is wrong
};

// Each thread counts on its own and adds its count once, so that an output wrong everywhere costs no more than one
// right everywhere.
__global__ void compare_transpose_kernel(const float* input, const float* output, std::size_t rows, std::size_t cols,
                                         TransposeFindings* findings) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t count = rows * cols;
    unsigned long long wrong = 0, first_wrong = ~0ull;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const std::size_t x = i / rows, y = i % rows;
        if (__float_as_uint(output[i]) != __float_as_uint(input[y * cols + x])) {
            first_wrong = wrong++ == 0 ? i : first_wrong;
        }
    }
    if (wrong > 0) {
        atomicAdd(&findings->wrong, wrong);
        atomicMin(&findings->first_wrong, first_wrong);
    }
}

// Element (x, y) of the right cols x rows output: input[y][x].
struct TransposeExpected {
    const float* input;
    std::size_t cols;
    __device__ float operator()(std::size_t x, std::size_t y) const { return input[y * cols + x]; }
};

// Says which elements are wrong (writes outside the output are run_calls' to find, before this).
std::string check_transpose(const float* input, const float* output, std::size_t rows, std::size_t cols) {
    DeviceBuffer<TransposeFindings> counted(1);
    set_element(counted.get(), TransposeFindings{});
    compare_transpose_kernel<<<grid_for(rows * cols), 256>>>(input, output, rows, cols, counted.get());
    CUGRADE_CUDA_CHECK(cudaGetLastError());
    const TransposeFindings findings = read_element(counted.get());
    if (findings.wrong == 0) {
        return "";
    }
    const std::size_t first = findings.first_wrong;
    const std::size_t x = first / rows, y = first % rows;
    const float expected = read_element(input + y * cols + x);
    const float obtained = read_element(output + first);
    std::ostringstream detail;
    detail << rows << "x" << cols << ": " << findings.wrong << " of " << rows * cols
           << " elements wrong; the first is output[" << x << "][" << y << "]: expected " << describe_number(expected)
           << " (input[" << y << "][" << x << "]), got " << describe_number(obtained)
           << (is_poison(obtained) ? " (never written)" : "");
    return detail.str();
}

CaseOutcome run_case(const Case& c) {
    if (c.shape.size() != 2) {
        throw std::runtime_error("the transpose harness needs shapes [rows, cols]");
    }
    const std::size_t rows = c.shape[0], cols = c.shape[1];
    SeededInputs inputs(c, 1);
    // Room for the largest overshoot of a last tile of 32 along either side.
    GuardedBuffer output("the output", rows * cols, 32 * (rows + cols) + 1024, "check the bounds of the last tile");

    CaseCalls<decltype(transpose)> calls(cugrade_reference_transpose, inputs, {"input"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set), rows, cols, output.get(), stream);
    };
    // Every call is checked in full, timed ones too: a sample of elements would let a submission skip the rest.
    calls.check = [&](int set) { return check_transpose(inputs(set), output.get(), rows, cols); };
    calls.explain = [&](int set) -> std::optional<Explanation> {
        return explain_matrix(output.get(), cols, rows, TransposeExpected{inputs(set), cols}, "output");
    };
    calls.outputs = {&output};
    calls.bytes = 2.0 * static_cast<double>(rows * cols) * sizeof(float);
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
