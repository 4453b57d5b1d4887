// Landlock rulesets for kernel mode: which files a sandboxed process may read, execute, write and use as devices.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cugrade {

struct LandlockRules {
    std::vector<std::filesystem::path> readable;  // read and execute, beneath each path
    std::vector<std::filesystem::path> devices;   // read, write and ioctl
    std::vector<std::filesystem::path> writable;  // anything beneath (the working folder, /dev/shm)
    bool proc = true;                             // /proc: see proc_rights in landlock.cpp
    bool scope_abstract_sockets = true;           // no abstract Unix sockets to the outside (ABI 6)
};

// Builds a ruleset for the kernel's Landlock ABI `abi` (landlock_support()); its descriptor lies above 10 and closes
// on exec. Throws std::runtime_error ("cannot sandbox 'PROGRAM': ...").
int make_landlock_ruleset(const LandlockRules& rules, int abi, const std::string& program);

// Adds the /proc rule to `ruleset` in the child, after it mounted a /proc of its own (a rule holds the folder it was
// opened on, and the new /proc is another). Async-signal-safe; false with errno set when it failed.
bool allow_proc(int ruleset, int abi) noexcept;

// Likewise for a folder where the process may do anything (a /dev/shm of its own).
bool allow_writable(int ruleset, int abi, const char* path) noexcept;

// Enforces `ruleset` on the calling process. Async-signal-safe.
bool restrict_self(int ruleset) noexcept;

}  // namespace cugrade
