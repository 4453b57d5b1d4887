#include "sandbox/bubblewrap.hpp"

#include <unistd.h>

#include <filesystem>

#include "sandbox/process.hpp"
#include "base/file_io.hpp"
#include "sandbox/sandbox_paths.hpp"
#include "sandbox/sandbox_rules.hpp"

namespace cugrade {
namespace fs = std::filesystem;
using sandbox_paths::absolute_path;

namespace {

// Binds `path` read-only where it is; a link (/bin -> usr/bin on merged systems) stays a link.
void bind_read_only(std::vector<std::string>& args, const fs::path& path) {
    std::error_code ec;
    const auto status = fs::symlink_status(path, ec);
    if (ec || !fs::exists(status)) {
        return;
    }
    if (fs::is_symlink(status)) {
        args.insert(args.end(), {"--symlink", fs::read_symlink(path, ec).string(), path.string()});
    } else {
        args.insert(args.end(), {"--ro-bind", path.string(), path.string()});
    }
}

// What the new root binds of the system: its folders and files, and for GPU programs the kernel's interfaces.
std::vector<fs::path> system_paths(const SandboxPolicy& policy) {
    std::vector<fs::path> paths = sandbox_paths::system_folders();
    const auto& files = sandbox_paths::system_files();
    paths.insert(paths.end(), files.begin(), files.end());
    if (policy.gpu) {
        const auto& folders = sandbox_paths::gpu_system_folders();
        paths.insert(paths.end(), folders.begin(), folders.end());
    }
    return paths;
}

}  // namespace

const BubblewrapSupport& bubblewrap_support() {
    static const BubblewrapSupport support = [] {
        BubblewrapSupport result;
        const char* path_variable = std::getenv("PATH");
        std::string bwrap;
        for (const std::string& folder :
             {std::string(path_variable != nullptr ? path_variable : ""), std::string("/usr/bin:/bin")}) {
            std::size_t start = 0;
            while (bwrap.empty() && start <= folder.size()) {
                const std::size_t end = std::min(folder.find(':', start), folder.size());
                const fs::path candidate = fs::path(folder.substr(start, end - start)) / "bwrap";
                if (end > start && ::access(candidate.c_str(), X_OK) == 0) {
                    bwrap = candidate.string();
                }
                start = end + 1;
            }
        }
        if (bwrap.empty()) {
            result.problem = "bubblewrap is not installed";
            return result;
        }
        // Tried with the options a GPU program gets: in a container, mounting /proc or making namespaces is what
        // tends to be refused.
        SandboxPolicy policy;
        policy.gpu = true;
        policy.work_dir = fs::temp_directory_path();
        ProcessOptions options;
        options.argv = bubblewrap_command(bwrap, policy, {"true"});
        options.output_limit = 4096;
        try {
            const ProcessResult tried = run_process(options, std::chrono::seconds(20));
            if (tried.status.success()) {
                result.path = bwrap;
            } else {
                std::string first_line = tried.output.substr(0, tried.output.find('\n'));
                result.problem = first_line.empty() ? "bwrap " + tried.status.describe() : first_line;
            }
        } catch (const std::exception& e) {
            result.problem = e.what();
        }
        return result;
    }();
    return support;
}

std::vector<fs::path> bubblewrap_hidden(const SandboxPolicy& policy) {
    std::vector<fs::path> bound = system_paths(policy);
    for (const auto& path : policy.readable) {
        bound.push_back(absolute_path(path));
    }
    bound.push_back(absolute_path(policy.work_dir));
    std::vector<fs::path> hidden;
    for (const auto& path : policy.hidden) {
        const fs::path absolute = absolute_path(path);
        std::error_code ec;
        if (!fs::exists(absolute, ec)) {
            continue;
        }
        for (const auto& folder : bound) {
            if (lies_under(absolute, folder) && absolute != folder) {
                hidden.push_back(path);
                break;
            }
        }
    }
    return hidden;
}

std::vector<std::string> bubblewrap_command(const std::string& bwrap, const SandboxPolicy& policy,
                                            const std::vector<std::string>& command) {
    std::vector<std::string> args = {bwrap,           "--die-with-parent", "--new-session",
                                     "--unshare-pid", "--unshare-ipc",     "--unshare-uts"};
    if (!policy.network) {
        args.emplace_back("--unshare-net");
    }
    // bwrap keeps root's capabilities unless told: with them a program could unmount what hides the course.
    if (running_as_root()) {
        args.insert(args.end(), {"--cap-drop", "ALL"});
    }
    for (const auto& path : system_paths(policy)) {
        bind_read_only(args, path);
    }
    // A private /dev of the harmless devices with the GPU's added: the host's whole /dev would give a program
    // running as root its disks.
    args.insert(args.end(), {"--dev", "/dev"});
    if (policy.gpu) {
        for (const auto& device : sandbox_paths::gpu_devices()) {
            args.insert(args.end(), {"--dev-bind", device.string(), device.string()});
        }
        args.insert(args.end(), {"--tmpfs", "/dev/shm"});  // POSIX shared memory, for compute-sanitizer
    }
    args.insert(args.end(), {"--proc", "/proc", "--tmpfs", "/tmp"});
    // What must stay hidden although it lies under a bound folder (the course installed under /usr, say).
    for (const auto& path : bubblewrap_hidden(policy)) {
        const fs::path absolute = absolute_path(path);
        std::error_code ec;
        if (fs::is_directory(absolute, ec)) {
            args.insert(args.end(), {"--tmpfs", absolute.string()});
        } else {
            args.insert(args.end(), {"--ro-bind", "/dev/null", absolute.string()});
        }
    }
    // After the hidden ones, so that a readable path inside a hidden folder comes back.
    for (const auto& path : policy.readable) {
        const std::string absolute = absolute_path(path).string();
        args.insert(args.end(), {"--ro-bind-try", absolute, absolute});
    }
    const std::string work = absolute_path(policy.work_dir).string();
    // The new root itself read-only: what a program writes outside its working folder and /tmp fails.
    args.insert(args.end(), {"--bind", work, work, "--remount-ro", "/", "--chdir", work, "--"});
    args.insert(args.end(), command.begin(), command.end());
    return args;
}

}  // namespace cugrade
