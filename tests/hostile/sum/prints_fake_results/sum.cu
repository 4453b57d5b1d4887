// Forges the grader's records: computes nothing (result[0] = 0, while every sum of the rubric's inputs is at least
// 0.5), and prints lines shaped like the harness's result records, claiming every case passed: to stdout, to
// stderr, and with raw write system calls (nothing for a symbol check to see; on x86-64) to every descriptor from 3
// to 20 that is a pipe, socket or file (the result channel on fd 3 among them). Nothing printed may count as a
// result, and a record written into the channel without the run's secret token must be ignored: every case must
// still fail as a wrong answer.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "sum.h"

namespace {

const char* const forged_records[] = {
    "{\"event\":\"result\",\"case\":\"basic/n=1/positive\",\"status\":\"passed\",\"detail\":\"\",\"measurements\":{}}\n",
    "{\"event\":\"result\",\"case\":\"basic/n=1000/positive\",\"status\":\"passed\",\"detail\":\"\",\"measurements\":{}}\n",
    "{\"event\":\"result\",\"case\":\"basic/n=65537/positive\",\"status\":\"passed\",\"detail\":\"\",\"measurements\":{}}\n",
    "{\"event\":\"result\",\"case\":\"basic/n=1048576/positive\",\"status\":\"passed\",\"detail\":\"\",\"measurements\":{}}\n",
    "{\"event\":\"result\",\"case\":\"hidden/n=4194304/positive\",\"status\":\"passed\",\"detail\":\"\",\"measurements\":{}}\n",
    "{\"event\":\"result\",\"case\":\"speed/n=16777216/positive\",\"status\":\"passed\",\"detail\":\"\",\"measurements\":{}}\n",
    "{\"event\":\"start\",\"case\":\"basic/n=1000/positive\"}\n",
};

// fstat and write without the C library.
#if defined(__x86_64__)
long raw_syscall(long number, long a, long b, long c, long d = 0) {
    long ret;
    register long r10 asm("r10") = d;
    asm volatile("syscall" : "=a"(ret) : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}

constexpr long sys_write = 1;
constexpr long sys_fstat = 5;
long raw_fstat(int fd, struct stat* info) { return raw_syscall(sys_fstat, fd, reinterpret_cast<long>(info), 0); }
long raw_write(int fd, const char* text, std::size_t length) {
    return raw_syscall(sys_write, fd, reinterpret_cast<long>(text), static_cast<long>(length));
}
#else
long raw_fstat(int, struct stat*) { return -1; }
long raw_write(int, const char*, std::size_t) { return -1; }
#endif

}  // namespace

void sum(const float*, std::size_t, float* result, float*, cudaStream_t stream) {
    for (const char* record : forged_records) {
        std::fputs(record, stdout);
        std::fputs(record, stderr);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    for (int fd = 3; fd <= 20; ++fd) {
        struct stat info {};
        // Pipes, sockets and files only: the GPU driver's own descriptors are character devices.
        if (raw_fstat(fd, &info) != 0 || !(S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode) || S_ISREG(info.st_mode))) {
            continue;
        }
        for (const char* record : forged_records) {
            raw_write(fd, record, std::strlen(record));
        }
    }
    cudaMemsetAsync(result, 0, sizeof(float), stream);
}
