// The tools a grading runs: nvcc and its toolkit, binutils, and compute-sanitizer.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cugrade {

struct Toolchain {
    std::string nvcc = "nvcc";  // an absolute path once found
    std::string nvcc_version;   // the last line of `nvcc --version`, part of every cache key
    std::filesystem::path toolkit_root;  // the folder above nvcc's bin/: what a sandboxed build may read of it
    std::string ld = "ld";
    std::string nm = "nm";
    std::string objcopy = "objcopy";
    std::string readelf = "readelf";
    std::string objdump = "objdump";
    std::string compute_sanitizer;  // beside nvcc or on PATH; empty when neither has it
    std::vector<std::filesystem::path> include_dirs;  // headers the harness needs (nlohmann-json)
};

// Finds nvcc: `preferred` when given, else $CUGRADE_NVCC, else the one cugrade was built with, else PATH.
// Throws UsageError when none runs.
Toolchain find_toolchain(const std::optional<std::string>& preferred);

}  // namespace cugrade
