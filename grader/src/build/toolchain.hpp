// The tools a grading runs: nvcc and its toolkit, binutils, and compute-sanitizer.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cugrade {

struct Toolchain {
    std::string nvcc = "nvcc";           // an absolute path once found
    std::string nvcc_version;            // the last line of `nvcc --version`, part of every cache key
    std::string release;                 // "13.0", from "release 13.0, V13.0.88"; empty when nvcc did not say
    std::filesystem::path toolkit_root;  // the folder above nvcc's bin/: what a sandboxed build may read of it
    std::string ld = "ld";
    std::string nm = "nm";
    std::string objcopy = "objcopy";
    std::string readelf = "readelf";
    std::string objdump = "objdump";
    std::string compute_sanitizer;  // beside nvcc or on PATH; empty when neither has it
    std::string nsight_compute;     // ncu, beside nvcc or on PATH; empty when neither has it
    std::string cuobjdump;          // beside nvcc or on PATH; empty when neither has it (a toolkit of nvcc alone)
    // Where ncu's own files are: a toolkit's nsight-compute folder, or /opt/nvidia/nsight-compute where the toolkit
    // leaves ncu out (NVIDIA's containers): ncu reads them, so a sandbox that runs it must show them.
    std::filesystem::path nsight_compute_files;
    // CUPTI (libcupti.so of the toolkit), which the checker loads to read the GPU's counters on a slow speed test
    // itself (exercises/common/counter_profile.hpp); empty when the toolkit has none. Its folder holds what it loads.
    std::filesystem::path cupti_library;
    std::vector<std::filesystem::path> include_dirs;  // headers the harness needs (nlohmann-json)
};

// Finds nvcc: `preferred` when given, else $CUGRADE_NVCC, else the one cugrade was built with, else PATH.
// Throws UsageError when none runs.
Toolchain find_toolchain(const std::optional<std::string>& preferred);

}  // namespace cugrade
