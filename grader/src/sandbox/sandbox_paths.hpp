// What of the host a sandboxed process may see: an allowlist shared by both sandbox modes. Everything not named here
// (or in a policy's readable paths and working folder) is absent under bubblewrap and unreadable under Landlock.
#pragma once

#include <filesystem>
#include <vector>

namespace cugrade::sandbox_paths {

// Folders a program needs to run at all, read and executed: the system's programs, libraries and headers.
const std::vector<std::filesystem::path>& system_folders();

// Files of /etc that the dynamic loader, the compilers and the CUDA driver read; the rest of /etc stays out.
const std::vector<std::filesystem::path>& system_files();

// Kernel interfaces a GPU program needs read-only (the CUDA driver reads /sys); builds see neither.
const std::vector<std::filesystem::path>& gpu_system_folders();

// Device files any program may use: null, zero, full, random, urandom.
const std::vector<std::filesystem::path>& plain_devices();

// The GPU's device files that exist now (the grader has initialised CUDA by then, which creates them).
std::vector<std::filesystem::path> gpu_devices();

// An absolute, normalised path with its links resolved where they exist.
std::filesystem::path absolute_path(const std::filesystem::path& path);

}  // namespace cugrade::sandbox_paths
