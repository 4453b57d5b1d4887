// The bubblewrap command line of a sandboxed process: a new root of bind mounts that holds only what the allowlist
// (sandbox_paths.hpp) and the policy name, in new pid, network, IPC and UTS namespaces.
#pragma once

#include <string>
#include <vector>

#include "sandbox/sandbox.hpp"

namespace cugrade {

// `bwrap` options and `command` with its arguments, for a process started with `policy`. `bwrap` is the program that
// works here (bubblewrap_support().path).
std::vector<std::string> bubblewrap_command(const std::string& bwrap, const SandboxPolicy& policy,
                                            const std::vector<std::string>& command);

// The paths of `policy.hidden` that the new root would show (they lie under something it binds), and so are covered.
std::vector<std::filesystem::path> bubblewrap_hidden(const SandboxPolicy& policy);

}  // namespace cugrade
