#include "sandbox/sandbox_rules.hpp"

#include <unistd.h>

#include <cmath>

#include "sandbox/sandbox_paths.hpp"

namespace cugrade {

using sandbox_paths::absolute_path;

bool running_as_root() { return ::geteuid() == 0; }

rlim_t cpu_limit(double seconds) { return static_cast<rlim_t>(std::ceil(seconds)); }

LandlockRules landlock_rules(const SandboxPolicy& policy, bool mounts_later) {
    LandlockRules rules;
    rules.readable = sandbox_paths::system_folders();
    const auto& files = sandbox_paths::system_files();
    rules.readable.insert(rules.readable.end(), files.begin(), files.end());
    if (policy.gpu) {
        const auto& folders = sandbox_paths::gpu_system_folders();
        rules.readable.insert(rules.readable.end(), folders.begin(), folders.end());
    }
    for (const auto& path : policy.readable) {
        rules.readable.push_back(absolute_path(path));
    }
    rules.devices = sandbox_paths::plain_devices();
    if (policy.gpu) {
        const auto gpu = sandbox_paths::gpu_devices();
        rules.devices.insert(rules.devices.end(), gpu.begin(), gpu.end());
        if (!mounts_later) {
            rules.writable.emplace_back("/dev/shm");  // POSIX shared memory, for compute-sanitizer
        }
    }
    rules.writable.push_back(absolute_path(policy.work_dir));
    rules.proc = !mounts_later;
    rules.scope_abstract_sockets = !policy.network;
    return rules;
}

}  // namespace cugrade
