// The sandbox every child process of a grading (nvcc builds, harness runs) is started in: bubblewrap where it is
// installed and works, else the kernel's own facilities (Landlock, seccomp, namespaces); resource limits in both.
// What a sandboxed process may see is an allowlist: the system's programs and libraries, the paths its policy names
// and its working folder. docs/security.md says what each part stops.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cugrade {

struct SandboxPolicy {
    bool enabled = false;
    std::filesystem::path work_dir;  // read-write; the process's working directory; TMPDIR and HOME point here
    std::vector<std::filesystem::path> readable;  // read-only paths beyond the system's (the CUDA toolkit)
    // Paths to cover should they lie under something the sandbox shows (the course installed under /usr, say):
    // defence in depth, since the allowlist shows nothing else of the host anyway.
    std::vector<std::filesystem::path> hidden;
    bool gpu = false;         // the GPU's device files, /sys and /dev/shm
    bool network = false;     // false: no network
    double cpu_seconds = 0;   // RLIMIT_CPU, rounded up to whole seconds (0: none)
    int extra_processes = 0;  // processes and threads it may start (0: no limit)
    // Where the limit on processes is the user's (RLIMIT_NPROC, without a control group), the processes other
    // sandboxes of the same batch may start meanwhile, so that one busy sandbox does not starve the next.
    int processes_of_others = 0;
    std::uint64_t file_bytes = 0;       // RLIMIT_FSIZE (0: none)
    std::uint64_t memory_bytes = 0;     // memory of the whole process tree, or of each process (0: none)
    std::size_t output_kill_bytes = 0;  // kill the whole group once stdout+stderr exceed this (0: never)
    // automatic: bubblewrap when it is installed and works here, else the kernel's own facilities
    enum class Mode { automatic, bubblewrap, kernel } mode = Mode::automatic;
};

// Whether bubblewrap works on this machine: tried once per process with the options a sandbox uses.
struct BubblewrapSupport {
    std::string path;     // the bwrap that works; empty when none does
    std::string problem;  // why not: "bubblewrap is not installed", or bwrap's own message
};
const BubblewrapSupport& bubblewrap_support();

// The Landlock ABI version this kernel offers, asked once per process.
struct LandlockSupport {
    int abi = 0;          // 0: none
    std::string problem;  // why not: "landlock is not in this kernel", "landlock is not enabled at boot"
};
const LandlockSupport& landlock_support();

// The mode a policy runs in on this machine: bubblewrap or kernel, never automatic.
SandboxPolicy::Mode sandbox_mode(const SandboxPolicy& policy);
std::string sandbox_mode_name(SandboxPolicy::Mode mode);  // "automatic", "bubblewrap", "kernel"

// How strongly a sandbox contains its process on this machine, weakest first (--require-sandbox).
enum class Containment {
    none,   // limits at most: the host's files and processes are open to it
    files,  // the host's files are hidden (bubblewrap or Landlock), but other processes are visible
    full,   // files hidden, other processes invisible (a pid namespace), no network
};
std::string to_string(Containment level);  // "none", "files", "full"
std::optional<Containment> containment_from_string(const std::string& text);

struct ContainmentCheck {
    Containment level = Containment::none;
    std::vector<std::string> missing;  // what the next levels lack here, and how to get it
};
ContainmentCheck containment(const SandboxPolicy& policy);

// One short line per protection that applies to a process started with `policy` on this machine, and one per
// protection that does not and why. The report shows them; their wording is part of the interface.
std::vector<std::string> describe_protections(const SandboxPolicy& policy);

// The PATH of a sandboxed process: the system's folders.
inline constexpr const char* system_path_variable = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The variables a sandboxed process gets, and nothing else of cugrade's environment (where a secret could be):
// PATH (the system's folders), HOME and TMPDIR (its working folder), LANG and LC_ALL (C), and, where cugrade has
// them, CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER and LD_LIBRARY_PATH (the driver may be found through it).
std::vector<std::pair<std::string, std::string>> sandbox_environment(const SandboxPolicy& policy);

std::string describe_bytes(std::uint64_t bytes);   // "16 MiB", "512 KiB", "1000 bytes"
std::string describe_cpu_seconds(double seconds);  // "120 s": the whole seconds RLIMIT_CPU gets

class Cgroup;
class PidNamespace;

// ChildProcess's part: everything prepared before the process starts, then applied in the child before exec.
class SandboxLaunch {
public:
    // Picks the mode, rewrites `argv` to run under bubblewrap, replaces `environment` by sandbox_environment() plus
    // the caller's own entries, computes the limits, creates the control group and builds the Landlock ruleset.
    // Throws std::runtime_error ("cannot sandbox 'nvcc': ...").
    SandboxLaunch(const SandboxPolicy& policy, std::vector<std::string>& argv,
                  std::vector<std::pair<std::string, std::string>>& environment);
    ~SandboxLaunch();
    SandboxLaunch(const SandboxLaunch&) = delete;
    SandboxLaunch& operator=(const SandboxLaunch&) = delete;

    // Starts the child like fork(); in kernel mode with a pid namespace, the child is that namespace's init.
    pid_t spawn() const;

    // In the child, first: joins the control group. Then, when it is a namespace's init, sets the namespace up,
    // forks the program and waits for it (the program's side returns). Only async-signal-safe calls; returns what
    // failed (errno says why), or nullptr.
    const char* enter_namespaces() const noexcept;

    // In the program's process, after its file descriptors and working directory are set: limits, capabilities,
    // Landlock, seccomp. Async-signal-safe; returns what failed, or nullptr.
    const char* enter() const noexcept;

    SandboxPolicy::Mode mode() const { return mode_; }
    // Whether the process cugrade waits for reports the program's death by signal N as exit code 128 + N (bwrap,
    // and a pid namespace's init).
    bool encodes_signals() const;
    // Whether the memory limit ended a process (known only with a control group).
    bool memory_exceeded() const;
    // Kills whatever is left of the process tree (with a control group: also what left the process group).
    void kill_remaining() const;

private:
    void set_limits(const SandboxPolicy& policy);
    void prepare_in_process(const SandboxPolicy& policy, const std::string& program);

    struct Limit {
        int resource;
        rlimit value;
    };
    SandboxPolicy::Mode mode_;
    std::vector<Limit> limits_;
    int ruleset_fd_ = -1;  // kernel mode with Landlock
    int landlock_abi_ = 0;
    bool drop_capabilities_ = false;
    bool guard_proc_ = false;      // root without a pid namespace: /proc/sys and the like read-only
    bool proc_read_only_ = false;  // they are already
    bool deny_network_ = false;
    bool private_shm_ = false;  // a pid namespace with a /dev/shm of its own
    std::unique_ptr<PidNamespace> pid_namespace_;
    std::unique_ptr<Cgroup> cgroup_;
};

}  // namespace cugrade
