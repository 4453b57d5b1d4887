// A seccomp filter that takes the network, new processes and debugging of other processes away from a process. The
// grader installs it between fork and exec when bubblewrap is not available, and the harness installs it in itself
// once CUDA has started, so it is plain C++ on the kernel's own interfaces (no libseccomp) and allocates nothing.
#pragma once

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cugrade::seccomp {

struct Rules {
    // socket() of any family but AF_UNIX and AF_NETLINK fails with EACCES; io_uring, which can open sockets
    // without socket(), fails with EPERM.
    bool deny_network = false;
    // fork, vfork, execve, execveat fail with EPERM, clone too unless it makes a thread (CUDA starts threads);
    // clone3 fails with ENOSYS, since its flags cannot be inspected, and glibc then falls back to clone.
    bool deny_new_processes = false;
    // setsid and setpgid fail with EPERM: a process that left its group would escape the group kill.
    bool keep_process_group = false;
};
// Whatever the rules: ptrace, process_vm_readv and process_vm_writev fail with EPERM, system calls of another
// architecture kill the process, and x86-64's x32 calls fail with ENOSYS (their numbers would dodge the rules).

namespace detail {

#if defined(__x86_64__)
constexpr unsigned audit_arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned audit_arch = AUDIT_ARCH_AARCH64;
#else
#error "seccomp_filter.hpp knows x86-64 and aarch64 only"
#endif

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the filter reads the low half of 64-bit arguments");

// The filter is built on the stack: between fork and exec nothing may allocate.
struct Program {
    static constexpr unsigned capacity = 96;
    sock_filter code[capacity];
    unsigned short size = 0;
    bool overflow = false;

    void add(unsigned short op, unsigned k, unsigned char jump_true = 0, unsigned char jump_false = 0) {
        if (size == capacity) {
            overflow = true;
            return;
        }
        code[size++] = sock_filter{op, jump_true, jump_false, k};
    }
    void load(unsigned offset) { add(BPF_LD | BPF_W | BPF_ABS, offset); }
    void ret(unsigned action) { add(BPF_RET | BPF_K, action); }
    // if (A == nr) return action; A stays the system call number.
    void deny(long nr, unsigned action) {
        add(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1);
        ret(action);
    }
};

constexpr unsigned error(int number) { return SECCOMP_RET_ERRNO | (static_cast<unsigned>(number) & SECCOMP_RET_DATA); }
constexpr unsigned nr_offset = offsetof(seccomp_data, nr);
constexpr unsigned arch_offset = offsetof(seccomp_data, arch);
constexpr unsigned arg0_offset = offsetof(seccomp_data, args);  // the low 32 bits, on a little-endian machine

#ifdef __NR_clone3
constexpr long nr_clone3 = __NR_clone3;
#else
constexpr long nr_clone3 = 435;  // the same number on every architecture
#endif
#ifdef __NR_io_uring_setup
constexpr long nr_io_uring_setup = __NR_io_uring_setup;
#else
constexpr long nr_io_uring_setup = 425;
#endif

inline void build(Program& p, const Rules& rules) {
    p.load(arch_offset);
    p.add(BPF_JMP | BPF_JEQ | BPF_K, audit_arch, 1, 0);
    p.ret(SECCOMP_RET_KILL_PROCESS);
    p.load(nr_offset);
#if defined(__x86_64__)
    p.add(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* __X32_SYSCALL_BIT */, 0, 1);
    p.ret(error(ENOSYS));
#endif
    p.deny(__NR_ptrace, error(EPERM));
    p.deny(__NR_process_vm_readv, error(EPERM));
    p.deny(__NR_process_vm_writev, error(EPERM));
    if (rules.deny_network) {
        p.deny(nr_io_uring_setup, error(EPERM));
        // if (nr == socket) return domain == AF_UNIX || domain == AF_NETLINK ? allow : EACCES
        p.add(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 5);
        p.load(arg0_offset);
        p.add(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 2, 0);
        p.add(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0);
        p.ret(error(EACCES));
        p.ret(SECCOMP_RET_ALLOW);
    }
    if (rules.keep_process_group) {
        p.deny(__NR_setsid, error(EPERM));
        p.deny(__NR_setpgid, error(EPERM));
    }
    if (rules.deny_new_processes) {
#ifdef __NR_fork
        p.deny(__NR_fork, error(EPERM));
#endif
#ifdef __NR_vfork
        p.deny(__NR_vfork, error(EPERM));
#endif
        p.deny(__NR_execve, error(EPERM));
        p.deny(__NR_execveat, error(EPERM));
        p.deny(nr_clone3, error(ENOSYS));
        // if (nr == clone) return flags & CLONE_THREAD ? allow : EPERM (the flags are the first argument on both
        // architectures)
        p.add(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
        p.load(arg0_offset);
        p.add(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0);
        p.ret(error(EPERM));
        p.ret(SECCOMP_RET_ALLOW);
    }
    p.ret(SECCOMP_RET_ALLOW);
}

}  // namespace detail

// Installs the filter on every thread of the process (TSYNC: the harness calls this after CUDA has started its
// threads), after PR_SET_NO_NEW_PRIVS. Returns nullptr on success, else a static string saying what failed, with
// errno set by the call that failed. Async-signal-safe: callable between fork and exec.
inline const char* install(Rules rules) {
    detail::Program program;
    detail::build(program, rules);
    if (program.overflow) {
        return "seccomp filter too long";
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return "prctl(PR_SET_NO_NEW_PRIVS) failed";
    }
    sock_fprog fprog{program.size, program.code};
    const long result = ::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog);
    if (result < 0) {
        return "seccomp(SECCOMP_SET_MODE_FILTER) failed";
    }
    if (result > 0) {
        // The id of a thread that could not take the filter (one with a filter of its own that conflicts).
        errno = EBUSY;
        return "seccomp filter not applied to every thread";
    }
    return nullptr;
}

}  // namespace cugrade::seccomp
