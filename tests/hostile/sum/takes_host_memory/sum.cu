// Takes host memory until something stops it: 256 MiB at a time, one byte written on every page, up to 12 GiB. The
// harness's memory limit (4 GiB in the hostile rubric: a control group for the whole process, or a limit on its data)
// must stop it long before the machine's memory runs out: the allocation fails (then it gives the memory back and
// computes the correct sum), or the control group ends the process. If all 12 GiB were granted it writes a wrong
// result (-1).
#include "sum.h"

#include <cstdlib>

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

__global__ void write_wrong(float* result) { result[0] = -1.0f; }

namespace {

bool took_everything() {
    constexpr std::size_t chunk = std::size_t{256} << 20;
    constexpr int chunks = 12 * 4;
    static char* taken[chunks] = {};
    int count = 0;
    for (; count < chunks; ++count) {
        taken[count] = static_cast<char*>(std::malloc(chunk));
        if (taken[count] == nullptr) {
            break;
        }
        for (std::size_t page = 0; page < chunk; page += 4096) {
            taken[count][page] = 1;
        }
    }
    for (int i = 0; i < count; ++i) {
        std::free(taken[i]);
    }
    return count == chunks;
}

}  // namespace

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    static bool tried = false;  // once a process: each try takes seconds
    if (n > 1000000 && !tried && (tried = true) && took_everything()) {
        write_wrong<<<1, 1, 0, stream>>>(result);
        return;
    }
    tree_sum(input, n, result, scratch, stream);
}
