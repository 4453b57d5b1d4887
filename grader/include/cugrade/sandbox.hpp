// The sandbox every child process of a grading (nvcc builds, harness runs) is started in: bubblewrap where it is
// installed and works, else the kernel's own facilities (Landlock, seccomp); resource limits in both.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace cugrade {

struct SandboxPolicy {
    bool enabled = false;
    std::filesystem::path work_dir;                 // read-write; the process's working directory; TMPDIR and HOME point here
    std::vector<std::filesystem::path> readable;    // extra read-only paths (beyond the system's folders)
    std::vector<std::filesystem::path> hidden;      // must not be visible (course folder, cache, other submissions, HOME)
    bool network = false;                           // false: no network
    double cpu_seconds = 0;                         // RLIMIT_CPU, rounded up to whole seconds (0: none)
    int extra_processes = 0;                        // RLIMIT_NPROC = this user's current process+thread count + this (0: none)
    std::uint64_t file_bytes = 0;                   // RLIMIT_FSIZE (0: none)
    std::size_t output_kill_bytes = 0;              // kill the whole group once stdout+stderr exceed this (0: never)
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

// One short line per protection that applies to a process started with `policy` on this machine, and one per
// protection that does not and why. The report shows them; their wording is part of the interface.
std::vector<std::string> describe_protections(const SandboxPolicy& policy);

std::string describe_bytes(std::uint64_t bytes);  // "16 MiB", "512 KiB", "1000 bytes"
std::string describe_cpu_seconds(double seconds);  // "120 s": the whole seconds RLIMIT_CPU gets

// ChildProcess's part: everything prepared before fork, then applied in the child between fork and exec.
class SandboxLaunch {
public:
    // Picks the mode, rewrites `argv` to run under bubblewrap, adds TMPDIR and HOME to `environment`, computes the
    // limits and builds the Landlock ruleset. Throws std::runtime_error ("cannot sandbox 'nvcc': ...").
    SandboxLaunch(const SandboxPolicy& policy, std::vector<std::string>& argv,
                  std::vector<std::pair<std::string, std::string>>& environment);
    ~SandboxLaunch();
    SandboxLaunch(const SandboxLaunch&) = delete;
    SandboxLaunch& operator=(const SandboxLaunch&) = delete;

    // In the child, after its file descriptors and working directory are set: only async-signal-safe calls.
    // Returns nullptr, or what failed with errno saying why.
    const char* enter() const noexcept;

    SandboxPolicy::Mode mode() const { return mode_; }

private:
    struct Limit {
        int resource;
        rlimit value;
    };
    SandboxPolicy::Mode mode_;
    std::vector<Limit> limits_;
    int ruleset_fd_ = -1;  // kernel mode with Landlock
    bool drop_capabilities_ = false;
    bool guard_proc_ = false;      // root: /proc/sys and the like read-only in a mount namespace of its own
    bool proc_read_only_ = false;  // they are already
    bool deny_network_ = false;
};

}  // namespace cugrade
