#include "sandbox/landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "sandbox/sandbox.hpp"

// Landlock's interface grew after the headers of older distributions (Debian 12 knows ABI 2): the numbers below
// are the kernel's, fixed once published.
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// The access rights an ABI version knows: a ruleset may handle only those.
__u64 fs_rights(int abi) {
    __u64 rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                   LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                   LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                   LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                   LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2) {
        rights |= LANDLOCK_ACCESS_FS_REFER;
    }
    if (abi >= 3) {
        rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
    }
    if (abi >= 5) {
        rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    }
    return rights;
}
// Rights that make sense on a file rather than a folder: a rule on a file may hold no others.
constexpr __u64 file_rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                              LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
constexpr __u64 read_rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// CUDA names its threads by writing /proc/self/task/TID/comm and fails to start when it cannot. A rule cannot name
// the process's own folder (it does not exist before fork, and nvcc's or compute-sanitizer's children have others
// again), so /proc is writable as far as the kernel's own checks allow: a process's own files; for root, whom
// those checks let write much more, root_only_proc_files() are made read-only.
constexpr __u64 proc_rights = read_rights | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
constexpr __u64 device_rights = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;

// landlock_ruleset_attr as of ABI 6; older kernels are given only the part they know.
struct RulesetAttr {
    __u64 handled_access_fs = 0;
    __u64 handled_access_net = 0;
    __u64 scoped = 0;
};

std::size_t ruleset_attr_size(int abi) {
    return abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 2 * sizeof(__u64) : sizeof(__u64);
}

// 0 when allowed (or nothing is there to allow), else errno. Async-signal-safe.
int add_rule(int ruleset, const char* path, __u64 rights, __u64 handled) noexcept {
    const int fd = ::open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT || errno == ENOTDIR ? 0 : errno;
    }
    struct stat info {};
    if (::fstat(fd, &info) == 0 && !S_ISDIR(info.st_mode)) {
        rights &= file_rights;
    }
    landlock_path_beneath_attr rule{};
    rule.allowed_access = rights & handled;
    rule.parent_fd = fd;
    const long result = ::syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    const int error = errno;
    ::close(fd);
    return result == 0 ? 0 : error;
}

}  // namespace

const LandlockSupport& landlock_support() {
    static const LandlockSupport support = [] {
        LandlockSupport result;
        const long abi = ::syscall(__NR_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
        if (abi > 0) {
            result.abi = static_cast<int>(abi);
        } else if (errno == ENOSYS) {
            result.problem = "landlock is not in this kernel";
        } else if (errno == EOPNOTSUPP) {
            result.problem = "landlock is not enabled at boot";
        } else {
            result.problem = fmt::format("landlock: {}", std::strerror(errno));
        }
        return result;
    }();
    return support;
}

int make_landlock_ruleset(const LandlockRules& rules, int abi, const std::string& program) {
    RulesetAttr attr;
    attr.handled_access_fs = fs_rights(abi);
    if (abi >= 6) {
        attr.scoped = LANDLOCK_SCOPE_SIGNAL | (rules.scope_abstract_sockets ? LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET : 0);
    }
    const long ruleset = ::syscall(__NR_landlock_create_ruleset, &attr, ruleset_attr_size(abi), 0);
    if (ruleset < 0) {
        throw std::runtime_error(
            fmt::format("cannot sandbox '{}': landlock_create_ruleset failed: {}", program, std::strerror(errno)));
    }
    // Kept above the descriptors the child is given (0 to 3), which dup2 would otherwise close under it.
    const int fd = ::fcntl(static_cast<int>(ruleset), F_DUPFD_CLOEXEC, 10);
    const int dup_error = errno;
    ::close(static_cast<int>(ruleset));
    if (fd < 0) {
        throw std::runtime_error(fmt::format("cannot sandbox '{}': cannot keep the landlock ruleset: {}", program,
                                             std::strerror(dup_error)));
    }
    const __u64 handled = attr.handled_access_fs;
    const auto allow = [&](const fs::path& path, __u64 rights) {
        if (const int error = add_rule(fd, path.c_str(), rights, handled); error != 0) {
            ::close(fd);
            throw std::runtime_error(fmt::format("cannot sandbox '{}': landlock_add_rule failed for {}: {}", program,
                                                 path.string(), std::strerror(error)));
        }
    };
    for (const auto& path : rules.readable) {
        allow(path, read_rights);
    }
    if (rules.proc) {
        allow("/proc", proc_rights);
    }
    allow("/dev", LANDLOCK_ACCESS_FS_READ_DIR);
    for (const auto& device : rules.devices) {
        allow(device, device_rights | LANDLOCK_ACCESS_FS_READ_DIR);
    }
    for (const auto& path : rules.writable) {
        allow(path, handled);
    }
    return fd;
}

bool allow_proc(int ruleset, int abi) noexcept {
    const int error = add_rule(ruleset, "/proc", proc_rights, fs_rights(abi));
    errno = error;
    return error == 0;
}

bool allow_writable(int ruleset, int abi, const char* path) noexcept {
    const int error = add_rule(ruleset, path, fs_rights(abi), fs_rights(abi));
    errno = error;
    return error == 0;
}

bool restrict_self(int ruleset) noexcept { return ::syscall(__NR_landlock_restrict_self, ruleset, 0) == 0; }

}  // namespace cugrade
