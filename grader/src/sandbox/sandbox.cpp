#include "sandbox/sandbox.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "sandbox/bubblewrap.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/namespaces.hpp"
#include "sandbox/sandbox_paths.hpp"
#include "sandbox/sandbox_rules.hpp"
#include "seccomp_filter.hpp"

namespace fs = std::filesystem;

namespace cugrade {
namespace {

using sandbox_paths::absolute_path;

// Where execvp would find `name` on `path_variable`; empty with `error` set as execvp would set errno.
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

// A program that catches SIGXCPU gets a little longer before the hard limit's SIGKILL.
constexpr rlim_t cpu_grace_seconds = 3;

// Whether root_only_proc_files() are read-only already (a container's /proc usually is), for when root cannot make
// a mount namespace of its own to make them so.
bool root_only_proc_read_only() {
    for (const char* const* path = root_only_proc_files(); *path != nullptr; ++path) {
        struct statvfs info {};
        if (::statvfs(*path, &info) == 0 && (info.f_flag & ST_RDONLY) == 0) {
            return false;
        }
    }
    return true;
}

bool uses_pid_namespace(const SandboxPolicy& policy) {
    return sandbox_mode(policy) == SandboxPolicy::Mode::kernel && pid_namespace_support().available;
}

}  // namespace

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

std::vector<std::pair<std::string, std::string>> sandbox_environment(const SandboxPolicy& policy) {
    const std::string work = absolute_path(policy.work_dir).string();
    std::vector<std::pair<std::string, std::string>> environment = {
        {"PATH", system_path_variable}, {"HOME", work}, {"TMPDIR", work}, {"LANG", "C"}, {"LC_ALL", "C"}};
    for (const char* name : {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH"}) {
        if (const char* value = std::getenv(name); value != nullptr) {
            environment.emplace_back(name, value);
        }
    }
    return environment;
}

namespace {

void check_work_dir(const SandboxPolicy& policy, const std::string& program) {
    if (policy.work_dir.empty()) {
        throw std::runtime_error(fmt::format("cannot sandbox '{}': no working folder", program));
    }
    const fs::path work_dir = absolute_path(policy.work_dir);
    std::error_code ec;
    if (!fs::is_directory(work_dir, ec)) {
        throw std::runtime_error(
            fmt::format("cannot sandbox '{}': working folder {} does not exist", program, work_dir.string()));
    }
}

// The caller's entries (the result channel, a token, PATH) on top of the minimal environment; HOME and TMPDIR are
// always the working folder, the only place the process may write.
std::vector<std::pair<std::string, std::string>> confined_environment(
    const SandboxPolicy& policy, const std::vector<std::pair<std::string, std::string>>& environment) {
    auto minimal = sandbox_environment(policy);
    for (const auto& [key, value] : environment) {
        if (key == "HOME" || key == "TMPDIR") {
            continue;
        }
        std::erase_if(minimal, [&](const auto& entry) { return entry.first == key; });
        minimal.emplace_back(key, value);
    }
    return minimal;
}

// The command is found here rather than by bwrap, so that a missing command reads as it does without a sandbox.
std::vector<std::string> bubblewrap_argv(const SandboxPolicy& policy, const std::vector<std::string>& argv,
                                         const std::vector<std::pair<std::string, std::string>>& environment) {
    const std::string& program = argv[0];
    const auto& bubblewrap = bubblewrap_support();
    if (bubblewrap.path.empty()) {
        throw std::runtime_error(
            fmt::format("cannot sandbox '{}': bubblewrap does not work here: {}", program, bubblewrap.problem));
    }
    std::string path_variable = system_path_variable;
    for (const auto& [key, value] : environment) {
        if (key == "PATH") {
            path_variable = value;
        }
    }
    int error = 0;
    std::vector<std::string> command = argv;
    command[0] = find_in_path(program, path_variable, error);
    if (command[0].empty()) {
        throw std::runtime_error(fmt::format("cannot run '{}': {}", program, std::strerror(error)));
    }
    return bubblewrap_command(bubblewrap.path, policy, command);
}

}  // namespace

SandboxLaunch::SandboxLaunch(const SandboxPolicy& policy, std::vector<std::string>& argv,
                             std::vector<std::pair<std::string, std::string>>& environment)
    : mode_(sandbox_mode(policy)) {
    const std::string program = argv.empty() ? std::string() : argv[0];
    check_work_dir(policy, program);
    environment = confined_environment(policy, environment);
    set_limits(policy);
    if (mode_ == SandboxPolicy::Mode::bubblewrap) {
        argv = bubblewrap_argv(policy, argv, environment);
        return;
    }
    prepare_in_process(policy, program);
}

void SandboxLaunch::set_limits(const SandboxPolicy& policy) {
    const bool cgroups = policy.memory_bytes > 0 && cgroup_support().version > 0;
    if (cgroups) {
        const int processes = policy.extra_processes > 0 ? policy.extra_processes + 8 : 0;
        cgroup_ = std::make_unique<Cgroup>(policy.memory_bytes, processes);
    }
    limits_.push_back({RLIMIT_CORE, {0, 0}});
    if (policy.cpu_seconds > 0) {
        const rlim_t seconds = cpu_limit(policy.cpu_seconds);
        limits_.push_back({RLIMIT_CPU, {seconds, seconds + cpu_grace_seconds}});
    }
    if (policy.extra_processes > 0) {
        if (const long tasks = user_tasks(); tasks > 0) {
            // bwrap itself is two of the processes (outside and inside the PID namespace); a namespace's init one.
            const long helpers = mode_ == SandboxPolicy::Mode::bubblewrap ? 2 : 1;
            const auto limit =
                static_cast<rlim_t>(tasks + policy.extra_processes + helpers + policy.processes_of_others);
            limits_.push_back({RLIMIT_NPROC, {limit, limit}});
        }
    }
    if (policy.file_bytes > 0) {
        limits_.push_back({RLIMIT_FSIZE, {policy.file_bytes, policy.file_bytes}});
    }
    if (policy.memory_bytes > 0) {
        // Each process on its own too: a compiler's address space (a failed allocation ends it at once, rather than
        // the control group's reclaim and kill later). A GPU program reserves far more address space than it uses,
        // so without a control group only its data is limited.
        const auto bytes = static_cast<rlim_t>(policy.memory_bytes);
        if (!policy.gpu) {
            limits_.push_back({RLIMIT_AS, {bytes, bytes}});
        } else if (!cgroups) {
            limits_.push_back({RLIMIT_DATA, {bytes, bytes}});
        }
    }
}

void SandboxLaunch::prepare_in_process(const SandboxPolicy& policy, const std::string& program) {
    const bool root = running_as_root();
    const bool pid_namespace = uses_pid_namespace(policy);
    if (pid_namespace) {
        pid_namespace_ = std::make_unique<PidNamespace>(root, policy.gpu, !policy.network);
        private_shm_ = policy.gpu;
    }
    if (const int abi = landlock_support().abi; abi > 0) {
        landlock_abi_ = abi;
        // A /proc of the namespace's own is mounted in the child, and its rule is added there.
        ruleset_fd_ = make_landlock_ruleset(landlock_rules(policy, pid_namespace), abi, program);
    }
    drop_capabilities_ = root || pid_namespace_support().user_namespace;
    if (root && !pid_namespace) {
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

pid_t SandboxLaunch::spawn() const { return pid_namespace_ ? pid_namespace_->spawn() : ::fork(); }

bool SandboxLaunch::encodes_signals() const { return mode_ == SandboxPolicy::Mode::bubblewrap || pid_namespace_; }

bool SandboxLaunch::memory_exceeded() const { return cgroup_ && cgroup_->memory_exceeded(); }

void SandboxLaunch::kill_remaining() const {
    if (cgroup_) {
        cgroup_->kill_all();
    }
}

const char* SandboxLaunch::enter_namespaces() const noexcept {
    if (cgroup_) {
        for (const auto& file : cgroup_->procs_files()) {
            const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
            const bool joined = fd >= 0 && ::write(fd, "0", 1) == 1;
            if (fd >= 0) {
                ::close(fd);
            }
            if (!joined) {
                return "cannot join the control group";
            }
        }
    }
    if (!pid_namespace_) {
        return nullptr;
    }
    if (const char* failed = pid_namespace_->set_up(); failed != nullptr) {
        return failed;
    }
    if (ruleset_fd_ >= 0 && !allow_proc(ruleset_fd_, landlock_abi_)) {
        return "landlock_add_rule failed for /proc";
    }
    if (ruleset_fd_ >= 0 && private_shm_ && !allow_writable(ruleset_fd_, landlock_abi_, "/dev/shm")) {
        return "landlock_add_rule failed for /dev/shm";
    }
    // A raw clone, not fork(): this process was itself made by a raw clone (namespaces.cpp), which runs none of the
    // C library's fork handlers, so a lock another thread of cugrade held at that moment (malloc's) stays held here,
    // and fork() would wait on it forever.
    const pid_t program = static_cast<pid_t>(::syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr));
    if (program < 0) {
        return "cannot start the program in its pid namespace";
    }
    if (program > 0) {
        PidNamespace::wait_as_init(program);
    }
    return nullptr;
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
            if (const char* failed = make_root_only_proc_read_only(); failed != nullptr) {
                return failed;
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
    if (ruleset_fd_ >= 0 && !restrict_self(ruleset_fd_)) {
        return "landlock_restrict_self failed";
    }
    seccomp::Rules rules;
    rules.deny_network = deny_network_;
    rules.keep_process_group = true;  // the group kill is what ends every process
    return seccomp::install(rules);
}

}  // namespace cugrade
