// Lists /proc with raw system calls (nothing for a symbol check to see) to find the grader's and other students'
// processes, whose command lines and environments it could read. In its own pid namespace (bubblewrap's, or the
// kernel mode's) it sees its namespace's init, itself and its threads' leaders only. If it sees more than a handful
// of processes it writes a wrong result (-1), else the correct sum. On other architectures it only sums.
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

#if defined(__x86_64__)
long raw_syscall(long number, long a, long b, long c, long d = 0) {
    long ret;
    register long r10 asm("r10") = d;
    asm volatile("syscall" : "=a"(ret) : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}

constexpr long sys_openat = 257;
constexpr long sys_getdents64 = 217;
constexpr long sys_close = 3;
constexpr long at_fdcwd = -100;
constexpr long o_directory = 0200000;

// The number of processes /proc lists.
int visible_processes() {
    const long fd = raw_syscall(sys_openat, at_fdcwd, reinterpret_cast<long>("/proc"), o_directory, 0);
    if (fd < 0) {
        return 0;
    }
    int count = 0;
    alignas(8) static char buffer[1 << 16];
    for (long got; (got = raw_syscall(sys_getdents64, fd, reinterpret_cast<long>(buffer), sizeof buffer)) > 0;) {
        for (long at = 0; at < got;) {
            // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name
            const unsigned short length = *reinterpret_cast<unsigned short*>(buffer + at + 16);
            const char* name = buffer + at + 19;
            bool digits = name[0] != '\0';
            for (const char* c = name; *c != '\0'; ++c) {
                digits = digits && *c >= '0' && *c <= '9';
            }
            count += digits ? 1 : 0;
            at += length;
        }
    }
    raw_syscall(sys_close, fd, 0, 0);
    return count;
}
#else
int visible_processes() { return 0; }
#endif

}  // namespace

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    if (visible_processes() > 4) {
        write_wrong<<<1, 1, 0, stream>>>(result);
        return;
    }
    tree_sum(input, n, result, scratch, stream);
}
