// What contains a program, in the report's words: the containment level a policy reaches here, and a line for each
// protection and limit (cugrade/sandbox.hpp).
#include <fmt/format.h>

#include "sandbox/bubblewrap.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/sandbox.hpp"
#include "base/file_io.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/namespaces.hpp"
#include "sandbox/sandbox_paths.hpp"
#include "sandbox/sandbox_rules.hpp"

namespace fs = std::filesystem;

namespace cugrade {
namespace {

using sandbox_paths::absolute_path;

// The paths of `policy.hidden` that Landlock would leave readable, with the allowed folder each lies under.
std::vector<std::pair<fs::path, fs::path>> landlock_unhidden(const SandboxPolicy& policy) {
    const LandlockRules rules = landlock_rules(policy, false);
    std::vector<std::pair<fs::path, fs::path>> found;
    for (const auto& path : policy.hidden) {
        const fs::path absolute = absolute_path(path);
        std::error_code ec;
        if (!fs::exists(absolute, ec)) {
            continue;
        }
        for (const auto& folder : rules.readable) {
            if (lies_under(absolute, absolute_path(folder))) {
                found.emplace_back(path, folder);
                break;
            }
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
        limits.push_back(policy.processes_of_others > 0
                             ? fmt::format("processes +{} (+{} for the batch's other jobs)", policy.extra_processes,
                                           policy.processes_of_others)
                             : fmt::format("processes +{}", policy.extra_processes));
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

std::string to_string(Containment level) {
    switch (level) {
        case Containment::none: return "none";
        case Containment::files: return "files";
        case Containment::full: return "full";
    }
    return "none";
}

std::optional<Containment> containment_from_string(const std::string& text) {
    for (const Containment level : {Containment::none, Containment::files, Containment::full}) {
        if (to_string(level) == text) {
            return level;
        }
    }
    return std::nullopt;
}

ContainmentCheck containment(const SandboxPolicy& policy) {
    ContainmentCheck check;
    if (!policy.enabled) {
        check.missing.emplace_back("no sandbox is used");
        return check;
    }
    if (sandbox_mode(policy) == SandboxPolicy::Mode::bubblewrap && !bubblewrap_support().path.empty()) {
        check.level = Containment::full;
        return check;
    }
    const std::string bubblewrap = "bubblewrap is not used (" + bubblewrap_support().problem + ")";
    if (landlock_support().abi == 0) {
        check.missing.push_back(fmt::format("the host's files are not protected: {}, and {}; install bubblewrap, or "
                                            "use a kernel with Landlock enabled (Linux 5.13 or later, lsm=landlock)",
                                            bubblewrap, landlock_support().problem));
        return check;
    }
    check.level = Containment::files;
    if (!pid_namespace_support().available) {
        check.missing.push_back(fmt::format("other processes are visible: {}, and {}; install bubblewrap, run "
                                            "cugrade as root, or allow user namespaces (user.max_user_namespaces)",
                                            bubblewrap, pid_namespace_support().problem));
        return check;
    }
    check.level = Containment::full;
    return check;
}

std::vector<std::string> describe_protections(const SandboxPolicy& policy) {
    if (!policy.enabled) {
        return {"no sandbox"};
    }
    std::vector<std::string> lines;
    const bool root = running_as_root();
    const SandboxPolicy::Mode mode = sandbox_mode(policy);
    std::vector<std::string> shown = {"the system's folders"};
    for (const auto& path : policy.readable) {
        shown.push_back(path.string());
    }
    shown.emplace_back("the working folder");
    if (mode == SandboxPolicy::Mode::bubblewrap) {
        const auto& bubblewrap = bubblewrap_support();
        if (bubblewrap.path.empty()) {
            return {"bubblewrap unavailable: " + bubblewrap.problem};
        }
        lines.push_back("bubblewrap: nothing of the host visible but " + join(shown, ", ") + "; private /tmp and /dev");
        for (const auto& path : bubblewrap_hidden(policy)) {
            lines.push_back("bubblewrap: " + path.string() + " hidden");
        }
        lines.emplace_back(policy.network ? "network allowed" : "no network (network namespace)");
        lines.emplace_back("other processes invisible (pid namespace)");
    } else {
        if (policy.mode == SandboxPolicy::Mode::automatic) {
            lines.push_back("bubblewrap not used: " + bubblewrap_support().problem);
        }
        const auto& landlock = landlock_support();
        if (landlock.abi > 0) {
            lines.push_back(
                fmt::format("landlock (abi {}): nothing of the host readable but {}", landlock.abi, join(shown, ", ")));
            for (const auto& [path, folder] : landlock_unhidden(policy)) {
                lines.push_back(
                    fmt::format("landlock cannot hide {}: it lies under {}", path.string(), folder.string()));
            }
            lines.emplace_back(landlock.abi >= 6 ? "landlock: no signals to processes outside the sandbox"
                                                 : "signals not contained: needs landlock abi 6");
        } else {
            lines.push_back("files not protected: " + landlock.problem);
        }
        const auto& pid_namespace = pid_namespace_support();
        lines.emplace_back(policy.network            ? "network allowed"
                           : pid_namespace.available ? "no network (network namespace, and seccomp)"
                                                     : "seccomp: no network");
        lines.push_back(pid_namespace.available ? "other processes invisible (pid namespace)"
                                                : "other processes visible: " + pid_namespace.problem);
    }
    if (root) {
        lines.emplace_back("capabilities dropped (running as root)");
    }
    lines.emplace_back("environment: PATH, HOME, TMPDIR, LANG and the CUDA variables only");
    if (policy.memory_bytes > 0) {
        const auto& cgroup = cgroup_support();
        lines.push_back(cgroup.version > 0 ? fmt::format("memory: {} for the whole process tree (cgroup v{})",
                                                         describe_bytes(policy.memory_bytes), cgroup.version)
                                           : fmt::format("memory: {} per process (rlimit; {})",
                                                         describe_bytes(policy.memory_bytes), cgroup.problem));
    }
    if (const std::string limits = limits_line(policy); !limits.empty()) {
        lines.push_back(limits);
    }
    if (policy.extra_processes > 0 && root && cgroup_support().pids_base.empty()) {
        lines.emplace_back("process limit not enforced: running as root");
    }
    return lines;
}

}  // namespace cugrade
