#include "cugrade/sandbox.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "cugrade/process.hpp"
#include "seccomp_filter.hpp"

namespace fs = std::filesystem;

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
namespace {

// The folders a program needs to run at all: readable (and executable) in kernel mode.
const std::vector<fs::path>& system_folders() {
    static const std::vector<fs::path> folders = {"/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin",
                                                  "/etc", "/opt", "/proc", "/sys",  "/run"};
    return folders;
}

// Device files a program may use: the harmless ones, and the GPU's (whatever exists when the sandbox starts; the
// grader has initialised CUDA by then, which creates them).
std::vector<fs::path> gpu_devices() {
    std::vector<fs::path> devices;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/dev", ec)) {
        if (entry.path().filename().string().rfind("nvidia", 0) == 0) {
            devices.push_back(entry.path());
        }
    }
    std::sort(devices.begin(), devices.end());
    return devices;
}
const std::vector<fs::path>& plain_devices() {
    static const std::vector<fs::path> devices = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                                  "/dev/urandom"};
    return devices;
}

fs::path absolute_path(const fs::path& path) {
    std::error_code ec;
    fs::path result = fs::weakly_canonical(fs::absolute(path, ec), ec);
    return result.empty() ? fs::absolute(path, ec).lexically_normal() : result;
}

bool lies_under(const fs::path& path, const fs::path& folder) {
    const auto [folder_end, path_end] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
    return folder_end == folder.end();
}

bool running_as_root() { return ::geteuid() == 0; }

// Where execvp would find `name`; empty with `error` set as execvp would set errno when it finds nothing.
std::string find_in_path(const std::string& name, const std::string& path_variable, int& error) {
    if (name.find('/') != std::string::npos) {
        return name;
    }
    error = ENOENT;
    std::size_t start = 0;
    while (start <= path_variable.size()) {
        const std::size_t end = std::min(path_variable.find(':', start), path_variable.size());
        const std::string folder = end > start ? path_variable.substr(start, end - start) : ".";
        const fs::path candidate = fs::path(folder) / name;
        std::error_code ec;
        if (::access(candidate.c_str(), X_OK) != 0) {
            error = errno == EACCES ? EACCES : error;
        } else if (fs::is_regular_file(candidate, ec)) {
            return candidate.string();
        }
        start = end + 1;
    }
    return {};
}

// The processes and threads of this real user id: RLIMIT_NPROC counts them all against the limit.
long user_tasks() {
    const uid_t uid = ::getuid();
    long tasks = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        std::ifstream status(entry.path() / "status");
        std::string line;
        long threads = 0;
        bool same_user = false;
        while (std::getline(status, line)) {
            if (line.rfind("Uid:", 0) == 0) {
                same_user = std::strtoul(line.c_str() + 4, nullptr, 10) == uid;
            } else if (line.rfind("Threads:", 0) == 0) {
                threads = std::strtol(line.c_str() + 8, nullptr, 10);
            }
        }
        if (same_user) {
            tasks += std::max(threads, 1L);
        }
    }
    return tasks;
}

rlim_t cpu_limit(double seconds) { return static_cast<rlim_t>(std::ceil(seconds)); }
// A program that catches SIGXCPU gets a little longer before the hard limit's SIGKILL.
constexpr rlim_t cpu_grace_seconds = 3;

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
                              LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                              LANDLOCK_ACCESS_FS_IOCTL_DEV;
constexpr __u64 read_rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// CUDA names its threads by writing /proc/self/task/TID/comm and fails to start when it cannot. A rule cannot name
// the process's own folder (it does not exist before fork, and nvcc's or compute-sanitizer's children have others
// again), so /proc is writable as far as the kernel's own checks allow: a process's own files; for root, whom
// those checks let write much more, root_only_proc below is made read-only.
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

// The folders Landlock lets a program read: a hidden path beneath one of them stays readable.
std::vector<std::pair<fs::path, std::string>> landlock_readable(const SandboxPolicy& policy) {
    std::vector<std::pair<fs::path, std::string>> folders;
    for (const auto& folder : system_folders()) {
        folders.emplace_back(absolute_path(folder), folder.string());
    }
    for (const auto& path : policy.readable) {
        folders.emplace_back(absolute_path(path), path.string());
    }
    folders.emplace_back(absolute_path(policy.work_dir), policy.work_dir.string());
    return folders;
}

void add_rule(int ruleset, const fs::path& path, __u64 rights, __u64 handled, const std::string& program) {
    const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            return;  // nothing there to allow
        }
        throw std::runtime_error(
            fmt::format("cannot sandbox '{}': cannot open {}: {}", program, path.string(), std::strerror(errno)));
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
    if (result != 0) {
        throw std::runtime_error(fmt::format("cannot sandbox '{}': landlock_add_rule failed for {}: {}", program,
                                             path.string(), std::strerror(error)));
    }
}

// The ruleset of kernel mode: read and execute the system's folders and `readable`, use the plain and the GPU's
// devices, do anything in the working folder; nothing else.
int landlock_ruleset(const SandboxPolicy& policy, int abi, const std::string& program) {
    RulesetAttr attr;
    attr.handled_access_fs = fs_rights(abi);
    if (abi >= 6) {
        attr.scoped = LANDLOCK_SCOPE_SIGNAL | (policy.network ? 0 : LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET);
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
        throw std::runtime_error(
            fmt::format("cannot sandbox '{}': cannot keep the landlock ruleset: {}", program, std::strerror(dup_error)));
    }
    const __u64 handled = attr.handled_access_fs;
    try {
        for (const auto& folder : system_folders()) {
            add_rule(fd, folder, folder == "/proc" ? proc_rights : read_rights, handled, program);
        }
        add_rule(fd, "/dev", LANDLOCK_ACCESS_FS_READ_DIR, handled, program);
        for (const auto& device : plain_devices()) {
            add_rule(fd, device, device_rights, handled, program);
        }
        add_rule(fd, "/dev/shm", handled, handled, program);  // POSIX shared memory, for compute-sanitizer
        for (const auto& device : gpu_devices()) {
            add_rule(fd, device, device_rights | LANDLOCK_ACCESS_FS_READ_DIR, handled, program);
        }
        for (const auto& path : policy.readable) {
            add_rule(fd, absolute_path(path), read_rights, handled, program);
        }
        add_rule(fd, absolute_path(policy.work_dir), handled, handled, program);
    } catch (...) {
        ::close(fd);
        throw;
    }
    return fd;
}

// The files of /proc that root may write without any capability and must not: sysctls (kernel.core_pattern runs a
// program of its choosing as root), the SysRq trigger, interrupt and bus settings. bwrap makes the same read-only.
constexpr const char* root_only_proc[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"};

// Whether they are read-only already (a container's /proc usually is), for when root cannot make a mount
// namespace of its own to make them so.
bool root_only_proc_read_only() {
    for (const char* path : root_only_proc) {
        struct statvfs info {};
        if (::statvfs(path, &info) == 0 && (info.f_flag & ST_RDONLY) == 0) {
            return false;
        }
    }
    return true;
}

std::vector<std::string> bubblewrap_options(bool network) {
    std::vector<std::string> options = {"--die-with-parent", "--new-session", "--unshare-pid"};
    if (!network) {
        options.emplace_back("--unshare-net");
    }
    for (const char* option : {"--unshare-ipc", "--unshare-uts"}) {
        options.emplace_back(option);
    }
    // bwrap keeps root's capabilities unless told: with them a program could unmount what hides the course.
    if (running_as_root()) {
        for (const char* option : {"--cap-drop", "ALL"}) {
            options.emplace_back(option);
        }
    }
    // A private /dev of the harmless devices (and /dev/shm) with the GPU's added: the host's whole /dev would give
    // a program running as root its disks.
    for (const char* option : {"--ro-bind", "/", "/", "--dev", "/dev"}) {
        options.emplace_back(option);
    }
    for (const auto& device : gpu_devices()) {
        for (const std::string& option : {std::string("--dev-bind"), device.string(), device.string()}) {
            options.push_back(option);
        }
    }
    for (const char* option : {"--proc", "/proc", "--tmpfs", "/tmp"}) {
        options.emplace_back(option);
    }
    return options;
}

std::vector<fs::path> existing(const std::vector<fs::path>& paths) {
    std::vector<fs::path> found;
    for (const auto& path : paths) {
        std::error_code ec;
        if (fs::exists(absolute_path(path), ec)) {
            found.push_back(path);
        }
    }
    return found;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
    std::string text;
    for (const auto& part : parts) {
        text += text.empty() ? part : separator + part;
    }
    return text;
}

std::string limits_line(const SandboxPolicy& policy) {
    std::vector<std::string> limits;
    if (policy.cpu_seconds > 0) {
        limits.push_back("cpu " + describe_cpu_seconds(policy.cpu_seconds));
    }
    if (policy.extra_processes > 0) {
        limits.push_back(fmt::format("processes +{}", policy.extra_processes));
    }
    if (policy.file_bytes > 0) {
        limits.push_back("file size " + describe_bytes(policy.file_bytes));
    }
    if (policy.output_kill_bytes > 0) {
        limits.push_back("output " + describe_bytes(policy.output_kill_bytes));
    }
    return limits.empty() ? std::string() : "limits: " + join(limits, ", ");
}

}  // namespace

std::string describe_bytes(std::uint64_t bytes) {
    constexpr std::uint64_t kib = 1024;
    if (bytes > 0 && bytes % (kib * kib * kib) == 0) {
        return fmt::format("{} GiB", bytes / (kib * kib * kib));
    }
    if (bytes > 0 && bytes % (kib * kib) == 0) {
        return fmt::format("{} MiB", bytes / (kib * kib));
    }
    if (bytes > 0 && bytes % kib == 0) {
        return fmt::format("{} KiB", bytes / kib);
    }
    return fmt::format("{} bytes", bytes);
}

std::string describe_cpu_seconds(double seconds) { return fmt::format("{} s", cpu_limit(seconds)); }

const BubblewrapSupport& bubblewrap_support() {
    static const BubblewrapSupport support = [] {
        BubblewrapSupport result;
        const char* path_variable = std::getenv("PATH");
        int error = 0;
        std::string bwrap = find_in_path("bwrap", path_variable != nullptr ? path_variable : "/usr/bin:/bin", error);
        if (bwrap.empty()) {
            result.problem = "bubblewrap is not installed";
            return result;
        }
        // Tried with the options every sandbox uses: in a container, mounting /proc or making namespaces is what
        // tends to be refused.
        ProcessOptions options;
        options.argv = {bwrap};
        for (const auto& option : bubblewrap_options(false)) {
            options.argv.push_back(option);
        }
        for (const char* arg : {"--", "true"}) {
            options.argv.emplace_back(arg);
        }
        options.output_limit = 4096;
        try {
            const ProcessResult tried = run_process(options, std::chrono::seconds(20));
            if (tried.status.success()) {
                result.path = bwrap;
            } else {
                std::string first_line = tried.output.substr(0, tried.output.find('\n'));
                result.problem = first_line.empty() ? "bwrap " + tried.status.describe() : first_line;
            }
        } catch (const std::exception& e) {
            result.problem = e.what();
        }
        return result;
    }();
    return support;
}

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

SandboxPolicy::Mode sandbox_mode(const SandboxPolicy& policy) {
    if (policy.mode != SandboxPolicy::Mode::automatic) {
        return policy.mode;
    }
    return bubblewrap_support().path.empty() ? SandboxPolicy::Mode::kernel : SandboxPolicy::Mode::bubblewrap;
}

std::string sandbox_mode_name(SandboxPolicy::Mode mode) {
    switch (mode) {
        case SandboxPolicy::Mode::automatic: return "automatic";
        case SandboxPolicy::Mode::bubblewrap: return "bubblewrap";
        case SandboxPolicy::Mode::kernel: return "kernel";
    }
    return "?";
}

std::vector<std::string> describe_protections(const SandboxPolicy& policy) {
    if (!policy.enabled) {
        return {"no sandbox"};
    }
    std::vector<std::string> lines;
    const bool root = running_as_root();
    const SandboxPolicy::Mode mode = sandbox_mode(policy);
    if (mode == SandboxPolicy::Mode::bubblewrap) {
        const auto& bubblewrap = bubblewrap_support();
        if (bubblewrap.path.empty()) {
            return {"bubblewrap unavailable: " + bubblewrap.problem};
        }
        std::vector<std::string> hidden;
        for (const auto& path : existing(policy.hidden)) {
            hidden.push_back(path.string());
        }
        lines.push_back("bubblewrap: read-only system, private /tmp and /dev" +
                        (hidden.empty() ? std::string() : ", hidden: " + join(hidden, ", ")));
        lines.emplace_back(policy.network ? "network allowed" : "no network (network namespace)");
        lines.emplace_back("other processes invisible (pid namespace)");
    } else {
        if (policy.mode == SandboxPolicy::Mode::automatic) {
            lines.push_back("bubblewrap not used: " + bubblewrap_support().problem);
        }
        const auto& landlock = landlock_support();
        if (landlock.abi > 0) {
            lines.push_back(fmt::format(
                "landlock (abi {}): files outside the working folder and the system's folders unreadable",
                landlock.abi));
            const auto readable = landlock_readable(policy);
            for (const auto& path : existing(policy.hidden)) {
                const fs::path absolute = absolute_path(path);
                for (const auto& [folder, shown] : readable) {
                    if (lies_under(absolute, folder)) {
                        lines.push_back(fmt::format("landlock cannot hide {}: it lies under {}", path.string(), shown));
                        break;
                    }
                }
            }
            lines.emplace_back(landlock.abi >= 6 ? "landlock: no signals to processes outside the sandbox"
                                                 : "signals not contained: needs landlock abi 6");
        } else {
            lines.push_back("files not protected: " + landlock.problem);
        }
        lines.emplace_back(policy.network ? "network allowed" : "seccomp: no network");
        lines.emplace_back("other processes visible (no pid namespace)");
    }
    if (root) {
        lines.emplace_back("capabilities dropped (running as root)");
    }
    if (const std::string limits = limits_line(policy); !limits.empty()) {
        lines.push_back(limits);
    }
    if (policy.extra_processes > 0 && root) {
        lines.emplace_back("process limit not enforced: running as root");
    }
    return lines;
}

SandboxLaunch::SandboxLaunch(const SandboxPolicy& policy, std::vector<std::string>& argv,
                             std::vector<std::pair<std::string, std::string>>& environment)
    : mode_(sandbox_mode(policy)) {
    const std::string program = argv.empty() ? std::string() : argv[0];
    if (policy.work_dir.empty()) {
        throw std::runtime_error(fmt::format("cannot sandbox '{}': no working folder", program));
    }
    const fs::path work_dir = absolute_path(policy.work_dir);
    std::error_code ec;
    if (!fs::is_directory(work_dir, ec)) {
        throw std::runtime_error(
            fmt::format("cannot sandbox '{}': working folder {} does not exist", program, work_dir.string()));
    }

    limits_.push_back({RLIMIT_CORE, {0, 0}});
    if (policy.cpu_seconds > 0) {
        const rlim_t seconds = cpu_limit(policy.cpu_seconds);
        limits_.push_back({RLIMIT_CPU, {seconds, seconds + cpu_grace_seconds}});
    }
    if (policy.extra_processes > 0) {
        if (const long tasks = user_tasks(); tasks > 0) {
            // bwrap itself is two of the processes (outside and inside the PID namespace).
            const long bwrap = mode_ == SandboxPolicy::Mode::bubblewrap ? 2 : 0;
            const auto limit = static_cast<rlim_t>(tasks + policy.extra_processes + bwrap);
            limits_.push_back({RLIMIT_NPROC, {limit, limit}});
        }
    }
    if (policy.file_bytes > 0) {
        limits_.push_back({RLIMIT_FSIZE, {policy.file_bytes, policy.file_bytes}});
    }

    if (mode_ == SandboxPolicy::Mode::bubblewrap) {
        const auto& bubblewrap = bubblewrap_support();
        if (bubblewrap.path.empty()) {
            throw std::runtime_error(fmt::format("cannot sandbox '{}': bubblewrap does not work here: {}", program,
                                                 bubblewrap.problem));
        }
        // Found here rather than by bwrap, so that a missing command reads as it does without a sandbox.
        std::string path_variable;
        if (const char* path = std::getenv("PATH"); path != nullptr) {
            path_variable = path;
        }
        for (const auto& [key, value] : environment) {
            if (key == "PATH") {
                path_variable = value;
            }
        }
        int error = 0;
        const std::string command = find_in_path(program, path_variable, error);
        if (command.empty()) {
            throw std::runtime_error(fmt::format("cannot run '{}': {}", program, std::strerror(error)));
        }
        std::vector<std::string> wrapped = {bubblewrap.path};
        for (auto& option : bubblewrap_options(policy.network)) {
            wrapped.push_back(std::move(option));
        }
        // Hidden first, so that a readable path or the working folder inside a hidden folder comes back.
        for (const auto& path : policy.hidden) {
            const fs::path absolute = absolute_path(path);
            if (fs::is_directory(absolute, ec)) {
                wrapped.insert(wrapped.end(), {"--tmpfs", absolute.string()});
            } else if (fs::exists(absolute, ec)) {
                wrapped.insert(wrapped.end(), {"--ro-bind", "/dev/null", absolute.string()});
            }
        }
        for (const auto& path : policy.readable) {
            const std::string absolute = absolute_path(path).string();
            wrapped.insert(wrapped.end(), {"--ro-bind-try", absolute, absolute});
        }
        const std::string work = work_dir.string();
        wrapped.insert(wrapped.end(), {"--bind", work, work, "--chdir", work, "--setenv", "TMPDIR", work,
                                       "--setenv", "HOME", work, "--", command});
        wrapped.insert(wrapped.end(), argv.begin() + 1, argv.end());
        argv = std::move(wrapped);
        return;
    }

    // Replacing any the caller set: a folder outside the working one could not be written anyway.
    std::erase_if(environment, [](const auto& entry) { return entry.first == "TMPDIR" || entry.first == "HOME"; });
    environment.emplace_back("TMPDIR", work_dir.string());
    environment.emplace_back("HOME", work_dir.string());
    if (const int abi = landlock_support().abi; abi > 0) {
        ruleset_fd_ = landlock_ruleset(policy, abi, program);
    }
    drop_capabilities_ = running_as_root();
    if (drop_capabilities_) {
        guard_proc_ = true;
        proc_read_only_ = root_only_proc_read_only();
    }
    deny_network_ = !policy.network;
}

SandboxLaunch::~SandboxLaunch() {
    if (ruleset_fd_ >= 0) {
        ::close(ruleset_fd_);
    }
}

const char* SandboxLaunch::enter() const noexcept {
    for (const auto& limit : limits_) {
        if (::setrlimit(limit.resource, &limit.value) != 0) {
            return "setrlimit failed";
        }
    }
    if (mode_ != SandboxPolicy::Mode::kernel) {
        return nullptr;  // bwrap does the rest
    }
    if (guard_proc_) {
        // A mount namespace of its own, where the /proc files root could abuse are read-only.
        if (::unshare(CLONE_NEWNS) == 0) {
            if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
                return "cannot make the mounts private";
            }
            for (const char* path : root_only_proc) {
                if (::mount(path, path, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
                    if (errno == ENOENT) {
                        continue;
                    }
                    return "cannot make /proc/sys read-only";
                }
                constexpr unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
                if (::mount(nullptr, path, nullptr, flags, nullptr) != 0) {
                    return "cannot make /proc/sys read-only";
                }
            }
        } else if (!proc_read_only_) {
            return "cannot make /proc/sys read-only (no mount namespace)";
        }
    }
    if (drop_capabilities_) {
        // Root keeps its uid but none of its powers: no mounts, no module loading, no raising the limits above.
        for (int capability = 0; capability < 64; ++capability) {
            if (::prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 && errno != EINVAL) {
                return "cannot drop capabilities";
            }
        }
        if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
            return "cannot drop capabilities";
        }
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
        if (::syscall(SYS_capset, &header, data) != 0) {
            return "cannot drop capabilities";
        }
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return "prctl(PR_SET_NO_NEW_PRIVS) failed";
    }
    if (ruleset_fd_ >= 0 && ::syscall(__NR_landlock_restrict_self, ruleset_fd_, 0) != 0) {
        return "landlock_restrict_self failed";
    }
    seccomp::Rules rules;
    rules.deny_network = deny_network_;
    rules.keep_process_group = true;  // no pid namespace here: the group kill is what ends every process
    return seccomp::install(rules);
}

}  // namespace cugrade
