// Tries to start processes without the C library: on x86-64, 1000 raw `syscall` instructions for fork (number 57),
// invisible to a check of the object file's symbols. The harness's seccomp filter must make every one fail. A child,
// should one start, leaves at once with a raw exit_group. Then it computes the correct sum with the seed kernels,
// unless any fork succeeded, in which case it writes -1: so every case passes (or is merely slow) exactly when all
// the forks were refused. On other architectures it only computes the correct sum.
#include "sum.h"

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

bool fork_ever_succeeded = false;

#if defined(__x86_64__)
long raw_syscall1(long number, long a) {
    long ret;
    asm volatile("syscall" : "=a"(ret) : "a"(number), "D"(a) : "rcx", "r11", "memory");
    return ret;
}

void try_forks() {
    constexpr long sys_fork = 57;
    constexpr long sys_exit_group = 231;
    for (int i = 0; i < 1000; ++i) {
        const long pid = raw_syscall1(sys_fork, 0);
        if (pid == 0) {
            raw_syscall1(sys_exit_group, 0);  // the child: leave at once
        }
        if (pid > 0) {
            fork_ever_succeeded = true;
        }
    }
}
#else
void try_forks() {}
#endif

}  // namespace

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    try_forks();
    if (fork_ever_succeeded) {
        write_wrong<<<1, 1, 0, stream>>>(result);
        return;
    }
    tree_sum(input, n, result, scratch, stream);
}
