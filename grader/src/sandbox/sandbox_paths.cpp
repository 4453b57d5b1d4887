#include "sandbox/sandbox_paths.hpp"

#include <algorithm>

namespace cugrade::sandbox_paths {
namespace fs = std::filesystem;

const std::vector<fs::path>& system_folders() {
    static const std::vector<fs::path> folders = {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin"};
    return folders;
}

const std::vector<fs::path>& system_files() {
    static const std::vector<fs::path> files = {"/etc/ld.so.cache",  "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                                                "/etc/alternatives", "/etc/nvidia",     "/etc/localtime"};
    return files;
}

const std::vector<fs::path>& gpu_system_folders() {
    static const std::vector<fs::path> folders = {"/sys"};
    return folders;
}

const std::vector<fs::path>& plain_devices() {
    static const std::vector<fs::path> devices = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
    return devices;
}

std::vector<fs::path> gpu_devices() {
    std::vector<fs::path> devices;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/dev", ec)) {
        if (entry.path().filename().string().rfind("nvidia", 0) == 0) {
            devices.push_back(entry.path());
        }
    }
    std::sort(devices.begin(), devices.end());
    return devices;
}

fs::path absolute_path(const fs::path& path) {
    std::error_code ec;
    fs::path result = fs::weakly_canonical(fs::absolute(path, ec), ec);
    return result.empty() ? fs::absolute(path, ec).lexically_normal() : result;
}

}  // namespace cugrade::sandbox_paths
