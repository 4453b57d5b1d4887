// What it costs to time a call whose kernels another process launches: the figure behind capture and replay
// (docs/security.md). A checker process owns the memory (cuMem, shared with the runner as a file descriptor) and
// brackets each call with its own events; the runner waits for a "go" value, launches a sum kernel, writes "done".
// Printed per size: the same kernel launched by the checker itself ("local"), by the runner ("cross"), a runner
// call with no kernel ("empty cross"), and a runner that writes "done" before its kernel runs ("lying").
// Then whether a runner that leaves a kernel running after "done" slows the checker's next call.
//   scripts/cross-process-timing.sh            (builds with nvcc, runs on GPU 0)
#include <cuda.h>
#include <cuda_runtime.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define CK(x)                                                \
    do {                                                     \
        CUresult r_ = (x);                                   \
        if (r_ != CUDA_SUCCESS) {                            \
            const char* s;                                   \
            cuGetErrorName(r_, &s);                          \
            fprintf(stderr, "%d %s: %s\n", getpid(), #x, s); \
            exit(1);                                         \
        }                                                    \
    } while (0)
#define RK(x)                                                      \
    do {                                                           \
        cudaError_t r_ = (x);                                      \
        if (r_ != cudaSuccess) {                                   \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorName(r_)); \
            exit(1);                                               \
        }                                                          \
    } while (0)

struct Cmd {
    int op;
    unsigned k;
    unsigned long long n;
};  // op 0 honest, 1 lie (done first), 2 empty, 3 honest+background 5ms, 9 quit

__global__ void sum_kernel(const float* in, size_t n, float* out) {
    __shared__ float s[256];
    float t = 0;
    for (size_t i = blockIdx.x * 256ull + threadIdx.x; i < n; i += 256ull * gridDim.x) t += in[i];
    s[threadIdx.x] = t;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, s[0]);
}
__global__ void zero(float* out) { *out = 0; }
__global__ void spin(long long ns) {
    unsigned long long a, b;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(a));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(b));
    } while ((long long)(b - a) < ns);
}
__global__ void fill(float* p, size_t n) {
    for (size_t i = blockIdx.x * 256ull + threadIdx.x; i < n; i += 256ull * gridDim.x) p[i] = 1.0f;
}

static void send_fd(int s, int fd) {
    char b = 0;
    iovec io{&b, 1};
    char c[CMSG_SPACE(sizeof(int))];
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = c;
    m.msg_controllen = sizeof c;
    cmsghdr* h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
    if (sendmsg(s, &m, 0) != 1) {
        perror("sendmsg");
        exit(1);
    }
}
static int recv_fd(int s) {
    char b;
    iovec io{&b, 1};
    char c[CMSG_SPACE(sizeof(int))];
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = c;
    m.msg_controllen = sizeof c;
    if (recvmsg(s, &m, 0) != 1) {
        perror("recvmsg");
        exit(1);
    }
    int fd;
    memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fd);
    return fd;
}

static const size_t kBytes = 512ull << 20;  // input 64M floats max + tail
struct Layout {
    CUdeviceptr base;
    float* input() { return (float*)base; }
    float* result() { return (float*)(base + (300ull << 20)); }
    CUdeviceptr go() { return base + (301ull << 20); }
    CUdeviceptr done() { return base + (301ull << 20) + 256; }
};

static CUdeviceptr map_handle(CUmemGenericAllocationHandle h, size_t size) {
    CUdeviceptr p;
    CK(cuMemAddressReserve(&p, size, 0, 0, 0));
    CK(cuMemMap(p, size, 0, h, 0));
    CUmemAccessDesc a{};
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = 0;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemSetAccess(p, size, &a, 1));
    return p;
}

static int runner(int s) {
    CK(cuInit(0));
    CUdevice d;
    CK(cuDeviceGet(&d, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, d));
    CK(cuCtxSetCurrent(ctx));
    int fd = recv_fd(s);
    CUmemGenericAllocationHandle h;
    CK(cuMemImportFromShareableHandle(&h, (void*)(long)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    Layout L{map_handle(h, kBytes)};
    cudaStream_t st;
    RK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaStream_t bg;
    RK(cudaStreamCreateWithFlags(&bg, cudaStreamNonBlocking));
    // warm
    zero<<<1, 1, 0, st>>>(L.result());
    sum_kernel<<<1, 256, 0, st>>>(L.input(), 1, L.result());
    spin<<<1, 1, 0, st>>>(1);
    RK(cudaStreamSynchronize(st));
    for (;;) {
        Cmd c;
        if (read(s, &c, sizeof c) != sizeof c) return 0;
        if (c.op == 9) return 0;
        CK(cuStreamWaitValue32(st, L.go(), c.k, CU_STREAM_WAIT_VALUE_GEQ));
        unsigned blocks = (unsigned)std::min<size_t>((c.n + 255) / 256, 132 * 8);
        if (c.op == 1) CK(cuStreamWriteValue32(st, L.done(), c.k, 0));
        if (c.op != 2) {
            zero<<<1, 1, 0, st>>>(L.result());
            sum_kernel<<<blocks, 256, 0, st>>>(L.input(), c.n, L.result());
        }
        if (c.op != 1) CK(cuStreamWriteValue32(st, L.done(), c.k, 0));
        if (c.op == 3) {
            CK(cuStreamWaitValue32(bg, L.done(), c.k, CU_STREAM_WAIT_VALUE_GEQ));
            spin<<<132, 256, 0, bg>>>(5000000);
        }
        char ok = 1;
        write(s, &ok, 1);
    }
}

int main() {
    const bool newns = false;
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        if (newns) {
            if (unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET) != 0) perror("unshare");
            pid_t p2 = fork();
            if (p2 != 0) {
                int st;
                waitpid(p2, &st, 0);
                _exit(WEXITSTATUS(st));
            }
        }
        _exit(runner(sv[1]));
    }
    close(sv[1]);
    int s = sv[0];
    CK(cuInit(0));
    CUdevice d;
    CK(cuDeviceGet(&d, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, d));
    CK(cuCtxSetCurrent(ctx));
    char name[128];
    cuDeviceGetName(name, sizeof name, d);
    printf("device %s, runner in new namespaces: %d\n", name, newns);
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t gran;
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle h;
    CK(cuMemCreate(&h, kBytes, &prop, 0));
    int fd;
    CK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    Layout L{map_handle(h, kBytes)};
    send_fd(s, fd);
    fill<<<1024, 256>>>(L.input(), 64ull << 20);
    RK(cudaMemset((void*)L.go(), 0, 512));
    RK(cudaDeviceSynchronize());
    cudaStream_t st;
    RK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t A, B, P;
    cudaEventCreate(&A);
    cudaEventCreate(&B);
    cudaEventCreate(&P);
    float* snap;
    RK(cudaMalloc(&snap, 4));
    float* flushbuf;
    RK(cudaMalloc(&flushbuf, 100 << 20));
    unsigned k = 0;
    auto cross = [&](int op, size_t n, float* probe_ms, bool probe) {
        Cmd c{op, ++k, n};
        write(s, &c, sizeof c);
        char ok;
        if (read(s, &ok, 1) != 1) {
            fprintf(stderr, "runner died\n");
            exit(1);
        }
        RK(cudaMemsetAsync(flushbuf, 0, 100 << 20, st));
        RK(cudaEventRecord(A, st));
        CK(cuStreamWriteValue32(st, L.go(), c.k, 0));
        CK(cuStreamWaitValue32(st, L.done(), c.k, CU_STREAM_WAIT_VALUE_GEQ));
        RK(cudaEventRecord(B, st));
        RK(cudaMemcpyAsync(snap, L.result(), 4, cudaMemcpyDeviceToDevice, st));
        if (probe) {
            spin<<<1, 1, 0, st>>>(2000);
            RK(cudaEventRecord(P, st));
        }
        RK(cudaStreamSynchronize(st));
        float ms;
        cudaEventElapsedTime(&ms, A, B);
        if (probe) cudaEventElapsedTime(probe_ms, B, P);
        float v;
        cudaMemcpy(&v, snap, 4, cudaMemcpyDeviceToHost);
        return std::make_pair(ms, v);
    };
    auto local = [&](size_t n, float* probe_ms, bool probe) {
        unsigned blocks = (unsigned)std::min<size_t>((n + 255) / 256, 132 * 8);
        RK(cudaMemsetAsync(flushbuf, 0, 100 << 20, st));
        RK(cudaEventRecord(A, st));
        zero<<<1, 1, 0, st>>>(L.result());
        sum_kernel<<<blocks, 256, 0, st>>>(L.input(), n, L.result());
        RK(cudaEventRecord(B, st));
        RK(cudaMemcpyAsync(snap, L.result(), 4, cudaMemcpyDeviceToDevice, st));
        if (probe) {
            spin<<<1, 1, 0, st>>>(2000);
            RK(cudaEventRecord(P, st));
        }
        RK(cudaStreamSynchronize(st));
        float ms;
        cudaEventElapsedTime(&ms, A, B);
        if (probe) cudaEventElapsedTime(probe_ms, B, P);
        float v;
        cudaMemcpy(&v, snap, 4, cudaMemcpyDeviceToHost);
        return std::make_pair(ms, v);
    };
    auto med = [](std::vector<float> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    for (int w = 0; w < 20; ++w) {
        cross(0, 1 << 20, nullptr, false);
        local(1 << 20, nullptr, false);
    }
    for (size_t n : {size_t(0), size_t(1) << 16, size_t(1) << 20, size_t(1) << 24, size_t(1) << 26}) {
        std::vector<float> lo, cr, lie, em;
        int lie_ok = 0, cr_ok = 0;
        float p;
        for (int i = 0; i < 200; ++i) {
            auto a = local(n, &p, false);
            lo.push_back(a.first);
            auto b = cross(0, n, &p, false);
            cr.push_back(b.first);
            cr_ok += b.second == (float)n;
            auto c = cross(1, n, &p, false);
            lie.push_back(c.first);
            lie_ok += c.second == (float)n;
            auto e = cross(2, n, &p, false);
            em.push_back(e.first);
        }
        printf(
            "n=%zu local %.4f ms | cross %.4f ms (correct %d/200) | empty cross %.4f | lying %.4f ms (correct %d/200)\n",
            n, med(lo), med(cr), cr_ok, med(em), med(lie), lie_ok);
    }
    // background sabotage: runner leaves 5 ms of spinning after reporting done; how slow is a following local call, and
    // does the probe see it?
    {
        std::vector<float> t, pr, t0, pr0;
        float p;
        for (int i = 0; i < 30; ++i) {
            cross(0, 1 << 24, &p, true);
            auto a = local(1 << 24, &p, true);
            t0.push_back(a.first);
            pr0.push_back(p);
            cross(3, 1 << 24, &p, true);
            pr.push_back(p);
            auto b = local(1 << 24, &p, true);
            t.push_back(b.first);
        }
        printf(
            "after honest: local 16M %.4f ms, probe %.4f | after background: probe right after %.4f, next local %.4f ms\n",
            med(t0), med(pr0), med(pr), med(t));
    }
    Cmd q{9, 0, 0};
    write(s, &q, sizeof q);
    int status;
    waitpid(pid, &status, 0);
    printf("runner exit %d\n", status);
}
