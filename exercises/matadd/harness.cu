// The matrix-addition harness: two seeded rows x cols matrices, poisoned guard regions on both sides of C, and an
// exact check of every element, on the GPU. a + b in float32 is one correctly rounded addition, so every correct
// kernel gives the same bits.
#include <sstream>
#include <string>

#include "harness.cuh"
#include "matadd.h"
#include "matrix_mismatches.cuh"
#include "mismatch_count.cuh"

CUGRADE_REFERENCE(matadd);

namespace {

using namespace cugrade::harness;

// Element i of C is wrong unless it has the bits of a[i] + b[i], correctly rounded.
struct SumIsWrong {
    const float* a;
    const float* b;
    const float* c;
    __device__ bool operator()(std::size_t i) const {
        return __float_as_uint(c[i]) != __float_as_uint(__fadd_rn(a[i], b[i]));
    }
};

// Element (row, col) of the right C.
struct MatAddExpected {
    const float* a;
    const float* b;
    std::size_t cols;
    __device__ float operator()(std::size_t row, std::size_t col) const {
        return __fadd_rn(a[row * cols + col], b[row * cols + col]);
    }
};

std::string check_matadd(const float* a, const float* b, const float* c, std::size_t rows, std::size_t cols) {
    const Mismatches found = count_mismatches(rows * cols, SumIsWrong{a, b, c});
    if (found.wrong == 0) {
        return "";
    }
    const std::size_t first = found.first_wrong;
    const float x = read_element(a + first), y = read_element(b + first), obtained = read_element(c + first);
    std::ostringstream detail;
    detail << rows << "x" << cols << ": " << found.wrong << " of " << rows * cols << " elements wrong; the first is c["
           << first / cols << "][" << first % cols << "]: expected " << describe_number(x + y) << " ("
           << describe_number(x) << " + " << describe_number(y) << "), got " << describe_number(obtained)
           << (is_poison(obtained) ? " (never written)" : "");
    return detail.str();
}

CaseOutcome run_case(const Case& c) {
    if (c.shape.size() != 2) {
        throw std::runtime_error("the matadd harness needs shapes [rows, cols]");
    }
    const std::size_t rows = c.shape[0], cols = c.shape[1];
    SeededInputs inputs(c, 2);
    // Room for the overshoot of a last block of up to 32 rows or columns past either side.
    GuardedBuffer sum("c", rows * cols, 32 * (rows + cols) + 1024,
                      "check both bounds, row < rows and col < cols, before the write");

    CaseCalls<decltype(matadd)> calls(cugrade_reference_matadd, inputs, {"matrix a", "matrix b"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set, 0), inputs(set, 1), rows, cols, sum.get(), stream);
    };
    calls.check = [&](int set) { return check_matadd(inputs(set, 0), inputs(set, 1), sum.get(), rows, cols); };
    calls.explain = [&](int set) -> std::optional<Explanation> {
        return explain_matrix(sum.get(), rows, cols, MatAddExpected{inputs(set, 0), inputs(set, 1), cols}, "c");
    };
    calls.outputs = {&sum};
    calls.bytes = 3.0 * static_cast<double>(rows * cols) * sizeof(float);
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
