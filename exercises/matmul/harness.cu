// The matrix-multiply harness: seeded A (m x k) and B (k x n), each element of C = A B computed exactly on the GPU in
// double with its condition sum_l |a_il b_lj|, and every element of the submission's C checked against its own
// tolerance: that of a float32 dot product of length k (tolerance.hpp), zero where the products are whole numbers
// whose sum stays exact in float32. The check is one tiled pass in double, so a 4096^3 case stays fast.
#include <cmath>
#include <memory>
#include <sstream>
#include <string>

#include "harness.cuh"
#include "matmul.h"
#include "matrix_mismatches.cuh"
#include "mismatch_count.cuh"
#include "tolerance.hpp"

CUGRADE_REFERENCE(matmul);

namespace {

using namespace cugrade::harness;
namespace tol = cugrade::tolerance;

constexpr int kTile = 16;

// Element (row, col) of A B exactly (products of floats are exact in double, and the double sum's error is a tiny
// share of any float32 tolerance), and how far a float32 dot product of length k may lie from it.
__global__ void exact_product_kernel(const float* a, const float* b, std::size_t m, std::size_t k, std::size_t n,
                                     double lambda, double* exact, double* tolerance) {
    __shared__ float a_tile[kTile][kTile];
    __shared__ float b_tile[kTile][kTile + 1];
    const std::size_t row = static_cast<std::size_t>(blockIdx.y) * kTile + threadIdx.y;
    const std::size_t col = static_cast<std::size_t>(blockIdx.x) * kTile + threadIdx.x;
    double sum = 0.0, abs_sum = 0.0;
    bool integral = true;
    for (std::size_t l0 = 0; l0 < k; l0 += kTile) {
        a_tile[threadIdx.y][threadIdx.x] = row < m && l0 + threadIdx.x < k ? a[row * k + l0 + threadIdx.x] : 0.0f;
        b_tile[threadIdx.y][threadIdx.x] = l0 + threadIdx.y < k && col < n ? b[(l0 + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int t = 0; t < kTile; ++t) {
            const double p = static_cast<double>(a_tile[threadIdx.y][t]) * static_cast<double>(b_tile[t][threadIdx.x]);
            sum += p;
            abs_sum += fabs(p);
            integral = integral && rint(p) == p;
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        exact[row * n + col] = sum;
        tolerance[row * n + col] = tol::dot_tolerance(k, tol::SumReference{sum, abs_sum, integral}, lambda);
    }
}

// The right C of one input set: its exact elements and their tolerances, on the GPU.
struct ExactProduct {
    std::shared_ptr<DeviceBuffer<double>> exact;
    std::shared_ptr<DeviceBuffer<double>> tolerance;
};

ExactProduct exact_product(const float* a, const float* b, std::size_t m, std::size_t k, std::size_t n, double lambda) {
    ExactProduct product{std::make_shared<DeviceBuffer<double>>(m * n), std::make_shared<DeviceBuffer<double>>(m * n)};
    const dim3 blocks(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>((m + kTile - 1) / kTile));
    exact_product_kernel<<<blocks, dim3(kTile, kTile)>>>(a, b, m, k, n, lambda, product.exact->get(),
                                                         product.tolerance->get());
    CUGRADE_CUDA_CHECK(cudaGetLastError());
    CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
    return product;
}

// Element i of C is wrong when it lies outside its tolerance of the exact value.
struct OutsideTolerance {
    const float* c;
    const double* exact;
    const double* tolerance;
    __device__ bool operator()(std::size_t i) const { return !tol::within_tolerance(c[i], exact[i], tolerance[i]); }
};

// For explain_matrix, which compares bits: an element within its tolerance is its own expected value; any other
// expects the exact value, rounded to float32.
struct WithinTolerance {
    const float* c;
    const double* exact;
    const double* tolerance;
    std::size_t cols;
    __device__ float operator()(std::size_t row, std::size_t col) const {
        const std::size_t i = row * cols + col;
        return tol::within_tolerance(c[i], exact[i], tolerance[i]) ? c[i] : static_cast<float>(exact[i]);
    }
};

std::string check_product(const float* c, const ExactProduct& product, std::size_t m, std::size_t k, std::size_t n) {
    const Mismatches found =
        count_mismatches(m * n, OutsideTolerance{c, product.exact->get(), product.tolerance->get()});
    if (found.wrong == 0) {
        return "";
    }
    const std::size_t first = found.first_wrong;
    const double expected = read_element(product.exact->get() + first);
    const double tolerance = read_element(product.tolerance->get() + first);
    const float obtained = read_element(c + first);
    std::ostringstream detail;
    detail << m << "x" << n << ", k=" << k << ": " << found.wrong << " of " << m * n
           << " elements wrong; the first is c[" << first / n << "][" << first % n << "]: expected "
           << describe_number(static_cast<float>(expected))
           << (tolerance == 0.0 ? " exactly" : " within " + describe_number(static_cast<float>(tolerance))) << ", got "
           << describe_number(obtained) << (is_poison(obtained) ? " (never written)" : "");
    return detail.str();
}

CaseOutcome run_case(const Case& c) {
    if (c.shape.size() != 2) {
        throw std::runtime_error("the matmul harness needs shapes [m, n] and the parameter k");
    }
    const double k_parameter = c.parameter("k");
    if (!(k_parameter >= 1) || k_parameter != std::floor(k_parameter)) {
        throw std::runtime_error("the matmul harness needs the parameter k, a whole number of at least 1");
    }
    const std::size_t m = c.shape[0], n = c.shape[1], k = static_cast<std::size_t>(k_parameter);
    SeededInputs inputs(c, {m * k, k * n});
    PerInputSet<ExactProduct> products(
        inputs, [&](int set) { return exact_product(inputs(set, 0), inputs(set, 1), m, k, n, c.lambda); });
    // Room for the overshoot of a last tile of up to 128 rows or columns past either side.
    GuardedBuffer product("c", m * n, 128 * (m + n) + 4096,
                          "check row < m and col < n before each write of a tile's results");

    CaseCalls<decltype(matmul)> calls(cugrade_reference_matmul, inputs, {"matrix a", "matrix b"});
    calls.invoke = [&](auto entry, cudaStream_t stream, int set) {
        entry(inputs(set, 0), inputs(set, 1), product.get(), m, k, n, stream);
    };
    calls.check = [&](int set) { return check_product(product.get(), products[set], m, k, n); };
    calls.explain = [&](int set) -> std::optional<Explanation> {
        const ExactProduct& exact = products[set];
        return explain_matrix(product.get(), m, n,
                              WithinTolerance{product.get(), exact.exact->get(), exact.tolerance->get(), n}, "c");
    };
    calls.outputs = {&product};
    calls.bytes = static_cast<double>(m * k + k * n + m * n) * sizeof(float);
    calls.measurements = {{"k", k}, {"flops", 2.0 * static_cast<double>(m) * static_cast<double>(n) * k}};
    return run_calls(c, calls);
}

}  // namespace

CUGRADE_HARNESS_MAIN(run_case)
