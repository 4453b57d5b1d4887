// What a sandbox policy comes to in the kernel's terms, shared by the launch (sandbox.cpp, bubblewrap.cpp) and by what
// cugrade says contains a program (sandbox_description.cpp), so that they cannot drift apart.
#pragma once

#include <sys/resource.h>

#include "sandbox/sandbox.hpp"
#include "sandbox/landlock.hpp"

namespace cugrade {

bool running_as_root();

// The whole seconds of RLIMIT_CPU for a limit of `seconds`.
rlim_t cpu_limit(double seconds);

// In kernel mode: the allowlist as Landlock rules.
// `mounts_later`: /proc and /dev/shm are mounted anew in the child (a pid namespace of its own), whose rules are
// added there.
LandlockRules landlock_rules(const SandboxPolicy& policy, bool mounts_later);

}  // namespace cugrade
