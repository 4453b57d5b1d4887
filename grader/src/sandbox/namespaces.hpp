// A pid namespace of its own for a sandboxed process in kernel mode (bubblewrap makes its own): the process sees no
// other process of the machine, and everything it starts dies with it. The process cugrade starts becomes the
// namespace's init (pid 1), mounts a /proc that shows the namespace alone, starts the program as pid 2 and exits as
// the program did (a signal N as code 128 + N, as bubblewrap reports it).
#pragma once

#include <sys/types.h>

#include <string>

namespace cugrade {

struct PidNamespaceSupport {
    bool available = false;
    bool user_namespace = false;  // not root: the namespaces are made inside a user namespace of its own
    std::string problem;          // why not, when !available
};

// Tried once per process with a throwaway child.
const PidNamespaceSupport& pid_namespace_support();

// Everything the namespace's init needs, prepared before the process starts.
class PidNamespace {
public:
    // `private_shm`: a /dev/shm of its own; `private_network`: a network namespace of its own, with no interface up
    // and its own abstract Unix socket names. Tools name shared memory and sockets by process id (compute-sanitizer
    // does), and ids repeat from one pid namespace to the next: side by side, sandboxes would meet.
    PidNamespace(bool guard_root_proc, bool private_shm, bool private_network);

    // Starts a child in new pid, mount, IPC and network namespaces (and a user namespace when not root), like fork().
    pid_t spawn() const;

    // In the child, as pid 1: maps its ids (user namespace), mounts the namespace's /proc (and /dev/shm), makes the
    // /proc files root could abuse read-only. Only async-signal-safe calls; returns what failed, or nullptr.
    const char* set_up() const noexcept;

    // In the child, as pid 1, after forking the program: closes every descriptor, reaps every child until the
    // program ends, then exits as it did. Never returns.
    [[noreturn]] static void wait_as_init(pid_t program) noexcept;

private:
    bool user_namespace_;
    bool guard_root_proc_;
    bool private_shm_;
    bool private_network_;
    std::string uid_map_;
    std::string gid_map_;
};

// The /proc files root may write without any capability and must not (kernel.core_pattern runs a program of its
// choosing as root): made read-only in the sandbox's mount namespace, as bubblewrap does.
const char* const* root_only_proc_files();

// Makes root_only_proc_files() read-only in the current mount namespace (which must be private to the process).
// Async-signal-safe; returns what failed, or nullptr.
const char* make_root_only_proc_read_only() noexcept;

}  // namespace cugrade
