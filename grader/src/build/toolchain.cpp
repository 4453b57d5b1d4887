#include "build/toolchain.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstdlib>
#include <cstdio>
#include <regex>
#include <sstream>

#include "base/config.hpp"
#include "base/error.hpp"
#include "sandbox/process.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// `tool` from the folder `program` lives in (found on PATH when it names no folder), else from PATH; or empty.
std::string find_beside(const std::string& program, const std::string& tool) {
    std::vector<fs::path> dirs;
    if (program.find('/') != std::string::npos) {
        dirs.push_back(fs::path(program).parent_path());
    }
    if (const char* path = std::getenv("PATH"); path != nullptr) {
        std::istringstream entries(path);
        for (std::string entry; std::getline(entries, entry, ':');) {
            if (!entry.empty() && program.find('/') == std::string::npos && fs::exists(fs::path(entry) / program)) {
                dirs.insert(dirs.begin(), entry);
            }
            dirs.push_back(entry);
        }
    }
    for (const auto& dir : dirs) {
        if (::access((dir / tool).c_str(), X_OK) == 0) {
            return (dir / tool).string();
        }
    }
    return "";
}

// The toolkit's CUPTI, wherever its layout puts it (NVIDIA's packages, the runfile, a distribution's), resolved to
// the file itself.
fs::path find_cupti(const fs::path& toolkit_root) {
    std::error_code ec;
    for (const fs::path& candidate :
         {toolkit_root / "lib64" / "libcupti.so", toolkit_root / "targets" / "x86_64-linux" / "lib" / "libcupti.so",
          toolkit_root / "targets" / "sbsa-linux" / "lib" / "libcupti.so",
          toolkit_root / "extras" / "CUPTI" / "lib64" / "libcupti.so", toolkit_root / "lib" / "libcupti.so",
          fs::path("/usr/lib/x86_64-linux-gnu/libcupti.so"), fs::path("/usr/lib/aarch64-linux-gnu/libcupti.so")}) {
        if (fs::exists(candidate, ec)) {
            return fs::canonical(candidate, ec);
        }
    }
    return {};
}

}  // namespace

Toolchain find_toolchain(const std::optional<std::string>& preferred) {
    std::vector<std::string> candidates;
    if (preferred) {
        candidates.push_back(*preferred);
    } else {
        if (const char* env = std::getenv("CUGRADE_NVCC"); env != nullptr && *env != '\0') {
            candidates.push_back(env);
        }
        candidates.push_back(CUGRADE_NVCC);
        candidates.push_back("nvcc");
    }
    for (const auto& nvcc : candidates) {
        try {
            ProcessOptions options;
            options.argv = {nvcc, "--version"};
            const ProcessResult version = run_process(options, std::chrono::seconds(60));
            if (!version.status.success()) {
                continue;
            }
            Toolchain toolchain;
            // Absolute: sandboxed builds search only the system's folders.
            toolchain.nvcc = nvcc.find('/') == std::string::npos ? find_beside(nvcc, nvcc) : nvcc;
            std::error_code ec;
            toolchain.nvcc = fs::absolute(toolchain.nvcc, ec).string();
            toolchain.toolkit_root = fs::canonical(toolchain.nvcc, ec).parent_path().parent_path();
            std::istringstream lines(version.output);
            static const std::regex release(R"(release (\d+\.\d+))");
            for (std::string line; std::getline(lines, line);) {
                if (!line.empty()) {
                    toolchain.nvcc_version = line;
                }
                if (std::smatch m; std::regex_search(line, m, release)) {
                    toolchain.release = m[1].str();
                }
            }
            toolchain.compute_sanitizer = find_beside(nvcc, "compute-sanitizer");
            toolchain.nsight_compute = find_beside(nvcc, "ncu");
            toolchain.cuobjdump = find_beside(nvcc, "cuobjdump");
            if (!toolchain.nsight_compute.empty()) {
                const fs::path root = fs::canonical(toolchain.nsight_compute, ec).parent_path().parent_path();
                for (const auto& entry : fs::directory_iterator(root, ec)) {
                    if (entry.path().filename().string().rfind("nsight-compute", 0) == 0) {
                        toolchain.nsight_compute_files = entry.path();
                    }
                }
                if (toolchain.nsight_compute_files.empty() && fs::is_directory("/opt/nvidia/nsight-compute", ec)) {
                    toolchain.nsight_compute_files = "/opt/nvidia/nsight-compute";
                }
            }
            toolchain.cupti_library = find_cupti(toolchain.toolkit_root);
            for (const char* dir : {CUGRADE_JSON_INCLUDE_DIR}) {
                const fs::path path = dir;
                // The system folders are searched anyway; naming them with -I reorders them and breaks libstdc++.
                if (!path.empty() && path != "/usr/include" && path != "/usr/local/include") {
                    toolchain.include_dirs.push_back(path);
                }
            }
            return toolchain;
        } catch (const std::runtime_error&) {
            continue;
        }
    }
    throw UsageError(fmt::format("cannot run nvcc (tried {}); install the CUDA toolkit or name it with --nvcc",
                                 fmt::join(candidates, ", ")));
}

}  // namespace cugrade
