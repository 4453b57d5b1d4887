// Tries to escape without the C library: on x86-64, raw `syscall` instructions (nothing for a symbol check to see)
// for socket(AF_INET) and a non-blocking connect to 1.1.1.1:80, and openat of "/root/.bashrc" and of files in the
// home folder of the user it runs as (found in /etc/passwd where that is readable: the grader rewrites HOME). The
// sandbox (the harness's seccomp filter; the allowlist of the host and the network namespace, of bubblewrap or of the
// kernel mode, or Landlock) must refuse them all. If any succeeds (a connect that completes or is in progress, an open that returns a descriptor)
// it writes a wrong result (-1), else the correct sum with the seed kernels: so every case passes (or is merely
// slow) exactly when the sandbox held. On other architectures it only computes the correct sum.
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

bool escaped = false;

#if defined(__x86_64__)
long raw_syscall(long number, long a, long b, long c, long d = 0) {
    long ret;
    register long r10 asm("r10") = d;
    asm volatile("syscall" : "=a"(ret) : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}

constexpr long sys_read = 0;
constexpr long sys_close = 3;
constexpr long sys_socket = 41;
constexpr long sys_connect = 42;
constexpr long sys_openat = 257;
constexpr long sys_getuid = 102;
constexpr long at_fdcwd = -100;
constexpr long o_rdonly = 0;
constexpr long o_directory = 0200000;
constexpr long af_inet = 2;
constexpr long sock_stream = 1;
constexpr long sock_nonblock = 04000;
constexpr long einprogress = 115;

struct Ipv4Address {  // struct sockaddr_in, spelt out: no system header involved
    unsigned short family;
    unsigned short port;  // network byte order
    unsigned char address[4];
    unsigned char zero[8];
};

void try_connect() {
    const long fd = raw_syscall(sys_socket, af_inet, sock_stream | sock_nonblock, 0);
    if (fd < 0) {
        return;
    }
    const Ipv4Address address{static_cast<unsigned short>(af_inet), static_cast<unsigned short>((80 >> 8) | (80 << 8)),
                              {1, 1, 1, 1}, {}};
    const long connected = raw_syscall(sys_connect, fd, reinterpret_cast<long>(&address), sizeof address);
    if (connected == 0 || connected == -einprogress) {
        escaped = true;
    }
    raw_syscall(sys_close, fd, 0, 0);
}

void try_open(const char* path, long flags) {
    const long fd = raw_syscall(sys_openat, at_fdcwd, reinterpret_cast<long>(path), flags, 0);
    if (fd >= 0) {
        escaped = true;
        char buffer[64];
        raw_syscall(sys_read, fd, reinterpret_cast<long>(buffer), sizeof buffer);
        raw_syscall(sys_close, fd, 0, 0);
    }
}

// The home folder of the user this process runs as, from /etc/passwd; empty if not found.
void real_home(char* home, std::size_t capacity) {
    home[0] = '\0';
    const long uid = raw_syscall(sys_getuid, 0, 0, 0);
    const long fd = raw_syscall(sys_openat, at_fdcwd, reinterpret_cast<long>("/etc/passwd"), o_rdonly, 0);
    if (fd < 0) {
        return;
    }
    static char text[1 << 16];
    long length = 0;
    for (long got; length < static_cast<long>(sizeof text) - 1 &&
                   (got = raw_syscall(sys_read, fd, reinterpret_cast<long>(text + length), sizeof text - 1 - length)) > 0;) {
        length += got;
    }
    raw_syscall(sys_close, fd, 0, 0);
    text[length > 0 ? length : 0] = '\0';
    // name:password:uid:gid:gecos:home:shell
    for (char* line = text; *line != '\0';) {
        char* end = line;
        while (*end != '\0' && *end != '\n') {
            ++end;
        }
        char* fields[7] = {};
        int count = 0;
        fields[count++] = line;
        for (char* c = line; c < end && count < 7; ++c) {
            if (*c == ':') {
                fields[count++] = c + 1;
            }
        }
        if (count == 7) {
            long line_uid = 0;
            bool digits = fields[2] < fields[3] - 1;
            for (char* c = fields[2]; c < fields[3] - 1; ++c) {
                digits = digits && *c >= '0' && *c <= '9';
                line_uid = line_uid * 10 + (*c - '0');
            }
            const std::size_t home_length = static_cast<std::size_t>(fields[6] - 1 - fields[5]);
            if (digits && line_uid == uid && home_length > 1 && home_length + 1 < capacity) {
                for (std::size_t i = 0; i < home_length; ++i) {
                    home[i] = fields[5][i];
                }
                home[home_length] = '\0';
                return;
            }
        }
        line = *end == '\n' ? end + 1 : end;
    }
}

void try_in_home(const char* home, const char* name, long flags) {
    char path[512];
    std::size_t length = 0;
    for (const char* c = home; *c != '\0' && length < sizeof path - 1; ++c) {
        path[length++] = *c;
    }
    for (const char* c = name; *c != '\0' && length < sizeof path - 1; ++c) {
        path[length++] = *c;
    }
    path[length] = '\0';
    try_open(path, flags);
}

void try_escape() {
    try_connect();
    try_open("/root/.bashrc", o_rdonly);
    char home[256];
    real_home(home, sizeof home);
    if (home[0] != '\0') {
        try_in_home(home, "/.bashrc", o_rdonly);
        try_in_home(home, "/.profile", o_rdonly);
        try_in_home(home, "/.cache/cugrade", o_rdonly | o_directory);
    }
}
#else
void try_escape() {}
#endif

}  // namespace

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    try_escape();
    if (escaped) {
        write_wrong<<<1, 1, 0, stream>>>(result);
        return;
    }
    tree_sum(input, n, result, scratch, stream);
}
