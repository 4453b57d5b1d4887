// A correct submission in ordinary C++, as students write them: standard-library strings and conversions,
// containers, algorithms, lambdas, a global object with a constructor, <iostream> (whose static initialiser older
// libstdc++ puts in every file that includes it), printf debugging. Its compiler instantiates names the grader's
// program has too. None of it may be refused: it computes the correct sum with the seed kernels.
#include "sum.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {
std::map<std::size_t, std::string> sizes_seen;  // a global with a constructor and a destructor
}

constexpr unsigned THREADS = 256;

__global__ void partial_sums(const float* input, std::size_t n, float* partials) {
    __shared__ float partial[THREADS];
    float acc = 0.0f;
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{blockDim.x} * gridDim.x) {
        acc += input[i];
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned active = blockDim.x / 2; active > 0; active /= 2) {
        if (threadIdx.x < active) {
            partial[threadIdx.x] += partial[threadIdx.x + active];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = partial[0];
    }
}

__global__ void final_sum(const float* partials, unsigned count, float* result) {
    __shared__ float partial[THREADS];
    float acc = 0.0f;
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) {
        acc += partials[i];
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned active = blockDim.x / 2; active > 0; active /= 2) {
        if (threadIdx.x < active) {
            partial[threadIdx.x] += partial[threadIdx.x + active];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        result[0] = partial[0];
    }
}

// The seed solution: a shared-memory tree per block into scratch, then one block over the partials.
static void tree_sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    const std::size_t wanted = (n + THREADS - 1) / THREADS;
    const unsigned blocks = static_cast<unsigned>(wanted == 0 ? 1 : wanted < 4096 ? wanted : 4096);
    partial_sums<<<blocks, THREADS, 0, stream>>>(input, n, scratch);
    final_sum<<<1, THREADS, 0, stream>>>(scratch, blocks, result);
}

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    std::vector<int> order{3, 1, 2};
    std::sort(order.begin(), order.end(), [](int a, int b) { return a > b; });
    sizes_seen[n] = std::to_string(n) + " elements, " + std::to_string(std::stoi("42"));
    if (n == 12345) {
        printf("%s\n", sizes_seen[n].c_str());
        std::cout << "debug: " << order[0] << std::endl;
    }
    tree_sum(input, n, result, scratch, stream);
}
