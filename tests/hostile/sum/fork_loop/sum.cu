// Tries to start processes: calls fork() in a loop inside sum() (each child, should one ever start, leaves at once
// with a raw exit_group system call, so this is never a fork bomb), then computes nothing else. The C library's
// process functions (fork, exec*, system, posix_spawn, ...) are forbidden to a submission, so the static check of
// its object file, which sees the undefined symbol fork, must reject every case before anything runs.
#include <unistd.h>

#include "sum.h"

namespace {

[[noreturn]] void leave_child() {
#if defined(__x86_64__)
    asm volatile("syscall" : : "a"(231L), "D"(0L) : "rcx", "r11", "memory");  // exit_group(0), no libc involved
#endif
    _exit(0);
}

}  // namespace

void sum(const float*, std::size_t, float* result, float*, cudaStream_t stream) {
    for (int i = 0; i < 64; ++i) {
        if (fork() == 0) {
            leave_child();
        }
    }
    cudaMemsetAsync(result, 0, sizeof(float), stream);
}
