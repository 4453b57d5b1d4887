#include "sandbox/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace cugrade {
namespace {

constexpr const char* root_only_proc[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", nullptr};

bool write_all(const char* path, const char* text) noexcept {
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    const auto length = static_cast<ssize_t>(std::strlen(text));
    const bool written = ::write(fd, text, static_cast<std::size_t>(length)) == length;
    ::close(fd);
    return written;
}

pid_t clone_into_namespaces(bool user_namespace, bool network_namespace) {
    unsigned long flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | SIGCHLD;
    if (user_namespace) {
        flags |= CLONE_NEWUSER;
    }
    if (network_namespace) {
        flags |= CLONE_NEWNET;
    }
    // clone without a new stack behaves as fork: the child continues on a copy of this stack.
    return static_cast<pid_t>(::syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr));
}

PidNamespaceSupport probe() {
    PidNamespaceSupport support;
    support.user_namespace = ::geteuid() != 0;
    const PidNamespace space(false, false, true);
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) {
        support.problem = fmt::format("cannot create a pipe: {}", std::strerror(errno));
        return support;
    }
    const pid_t child = space.spawn();
    if (child == 0) {
        ::close(report[0]);
        const char* failed = space.set_up();
        const int error = errno;
        if (failed != nullptr) {
            const std::string text = std::string(failed) + ": " + std::strerror(error);
            (void)!::write(report[1], text.data(), text.size());
            ::_exit(1);
        }
        ::_exit(::getpid() == 1 ? 0 : 2);
    }
    const int spawn_error = errno;
    ::close(report[1]);
    if (child < 0) {
        ::close(report[0]);
        support.problem = fmt::format("cannot create a pid namespace: {}", std::strerror(spawn_error));
        return support;
    }
    char text[256] = {};
    const ssize_t got = ::read(report[0], text, sizeof text - 1);
    ::close(report[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        support.available = true;
    } else {
        support.problem = got > 0 ? std::string(text) : "the namespace's init could not start";
    }
    return support;
}

}  // namespace

const PidNamespaceSupport& pid_namespace_support() {
    static const PidNamespaceSupport support = probe();
    return support;
}

const char* const* root_only_proc_files() { return root_only_proc; }

const char* make_root_only_proc_read_only() noexcept {
    for (const char* const* path = root_only_proc; *path != nullptr; ++path) {
        if (::mount(*path, *path, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
            if (errno == ENOENT) {
                continue;
            }
            return "cannot make /proc/sys read-only";
        }
        constexpr unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
        if (::mount(nullptr, *path, nullptr, flags, nullptr) != 0) {
            return "cannot make /proc/sys read-only";
        }
    }
    return nullptr;
}

PidNamespace::PidNamespace(bool guard_root_proc, bool private_shm, bool private_network)
    : user_namespace_(::geteuid() != 0),
      guard_root_proc_(guard_root_proc),
      private_shm_(private_shm),
      private_network_(private_network) {
    // A user namespace maps the process's own ids to themselves: it stays the same user, with no one else's rights.
    uid_map_ = fmt::format("{0} {0} 1\n", ::geteuid());
    gid_map_ = fmt::format("{0} {0} 1\n", ::getegid());
}

pid_t PidNamespace::spawn() const { return clone_into_namespaces(user_namespace_, private_network_); }

const char* PidNamespace::set_up() const noexcept {
    if (user_namespace_) {
        if (!write_all("/proc/self/setgroups", "deny") || !write_all("/proc/self/uid_map", uid_map_.c_str()) ||
            !write_all("/proc/self/gid_map", gid_map_.c_str())) {
            return "cannot map the user's ids in a user namespace";
        }
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        return "cannot make the mounts private";
    }
    if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        return "cannot mount the namespace's /proc";
    }
    if (private_shm_ && ::access("/dev/shm", F_OK) == 0 &&
        ::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777") != 0) {
        return "cannot mount a /dev/shm of its own";
    }
    if (guard_root_proc_) {
        return make_root_only_proc_read_only();
    }
    return nullptr;
}

void PidNamespace::wait_as_init(pid_t program) noexcept {
    // Holding no descriptor, init keeps no pipe open: the grader sees the output end when the program's side does.
    const int devnull = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) {
        ::dup2(devnull, fd);
    }
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
        for (int fd = 3; fd < 4096; ++fd) {
            ::close(fd);
        }
    }
    int program_status = 0;
    while (true) {
        int status = 0;
        const pid_t ended = ::waitpid(-1, &status, 0);
        if (ended == program) {
            program_status = status;
            break;
        }
        if (ended < 0 && errno != EINTR) {
            break;
        }
    }
    // When init exits, the kernel kills whatever is left in the namespace.
    ::_exit(WIFSIGNALED(program_status) ? 128 + WTERMSIG(program_status) : WEXITSTATUS(program_status));
}

}  // namespace cugrade
