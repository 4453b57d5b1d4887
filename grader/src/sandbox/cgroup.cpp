#include "sandbox/cgroup.hpp"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace cugrade {
namespace fs = std::filesystem;
namespace {

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
}

// Where each hierarchy is mounted: "cgroup2" for the unified one, else the v1 controller's name.
std::string mount_point(const std::string& controller) {
    std::istringstream lines(read_text("/proc/self/mountinfo"));
    for (std::string line; std::getline(lines, line);) {
        // "31 23 0:28 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory"
        std::istringstream fields(line);
        std::string id, parent, device, root, point, options, field;
        fields >> id >> parent >> device >> root >> point >> options;
        while (fields >> field && field != "-") {
        }
        std::string type, source, super_options;
        fields >> type >> source >> super_options;
        if (controller == "cgroup2"
                ? type == "cgroup2"
                : type == "cgroup" && ("," + super_options + ",").find("," + controller + ",") != std::string::npos) {
            return point;
        }
    }
    return {};
}

// This process's group in a hierarchy: "" for the unified one, else the v1 controller's name.
std::string own_group(const std::string& controller) {
    std::istringstream lines(read_text("/proc/self/cgroup"));
    for (std::string line; std::getline(lines, line);) {
        // "0::/user.slice/..." (v2) or "4:memory:/docker/abc" (v1)
        const auto first = line.find(':');
        const auto second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) {
            continue;
        }
        const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
        if (controller.empty() ? line.substr(0, first) == "0" && controllers == ",,"
                               : controllers.find("," + controller + ",") != std::string::npos) {
            return line.substr(second + 1);
        }
    }
    return {};
}

// A name no other cugrade uses at the same time, on this machine or another sharing the hierarchy.
std::string unique_name() {
    static std::atomic<unsigned> counter{0};
    std::random_device random;
    return fmt::format("cugrade-{}-{}-{:08x}", ::getpid(), counter++, random());
}

bool can_create_in(const fs::path& base, const char* limit_file) {
    std::error_code ec;
    const fs::path probe = base / unique_name();
    if (!fs::create_directory(probe, ec)) {
        return false;
    }
    const bool usable = fs::exists(probe / limit_file, ec);
    fs::remove(probe, ec);
    return usable;
}

CgroupSupport probe() {
    CgroupSupport support;
    if (const std::string point = mount_point("cgroup2"); !point.empty()) {
        const fs::path base = fs::path(point) / fs::path(own_group("")).relative_path();
        const std::string controllers = " " + read_text(base / "cgroup.subtree_control") + " ";
        if (controllers.find("memory") != std::string::npos && can_create_in(base, "memory.max")) {
            support.version = 2;
            support.memory_base = base;
            if (controllers.find("pids") != std::string::npos) {
                support.pids_base = base;
            }
            return support;
        }
    }
    if (const std::string point = mount_point("memory"); !point.empty()) {
        const fs::path base = fs::path(point) / fs::path(own_group("memory")).relative_path();
        if (can_create_in(base, "memory.limit_in_bytes")) {
            support.version = 1;
            support.memory_base = base;
            if (const std::string pids = mount_point("pids"); !pids.empty()) {
                const fs::path pids_base = fs::path(pids) / fs::path(own_group("pids")).relative_path();
                if (can_create_in(pids_base, "pids.max")) {
                    support.pids_base = pids_base;
                }
            }
            return support;
        }
    }
    support.problem = "no control group with a memory controller that cugrade may create groups in";
    return support;
}

void kill_members(const fs::path& folder) {
    std::istringstream lines(read_text(folder / "cgroup.procs"));
    for (long pid = 0; lines >> pid;) {
        ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
}

}  // namespace

const CgroupSupport& cgroup_support() {
    static const CgroupSupport support = probe();
    return support;
}

Cgroup::Cgroup(std::uint64_t memory_bytes, int max_processes) {
    const CgroupSupport& support = cgroup_support();
    version_ = support.version;
    if (version_ == 0) {
        return;
    }
    const auto create = [&](const fs::path& base) {
        const fs::path folder = base / unique_name();
        std::error_code ec;
        if (!fs::create_directory(folder, ec)) {
            throw std::runtime_error(fmt::format("cannot create control group {}: {}", folder.string(), ec.message()));
        }
        folders_.push_back(folder);
        procs_files_.push_back((folder / "cgroup.procs").string());
        return folder;
    };
    const auto set = [&](const fs::path& file, const std::string& value) {
        if (!write_text(file, value)) {
            throw std::runtime_error(fmt::format("cannot write {} to {}", value, file.string()));
        }
    };
    const fs::path memory = create(support.memory_base);
    if (version_ == 2) {
        set(memory / "memory.max", std::to_string(memory_bytes));
        std::error_code ec;
        if (fs::exists(memory / "memory.swap.max", ec)) {
            set(memory / "memory.swap.max", "0");
        }
        if (max_processes > 0 && !support.pids_base.empty()) {
            set(memory / "pids.max", std::to_string(max_processes));
        }
    } else {
        set(memory / "memory.limit_in_bytes", std::to_string(memory_bytes));
        std::error_code ec;
        if (fs::exists(memory / "memory.memsw.limit_in_bytes", ec)) {
            set(memory / "memory.memsw.limit_in_bytes", std::to_string(memory_bytes));
        }
        if (max_processes > 0 && !support.pids_base.empty()) {
            set(create(support.pids_base) / "pids.max", std::to_string(max_processes));
        }
    }
}

Cgroup::~Cgroup() {
    for (const auto& folder : folders_) {
        // A folder can be removed once its last process is gone; killed processes take a moment to leave.
        for (int attempt = 0; attempt < 200; ++attempt) {
            kill_members(folder);
            if (::rmdir(folder.c_str()) == 0 || errno == ENOENT) {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
}

void Cgroup::kill_all() const {
    for (const auto& folder : folders_) {
        kill_members(folder);
    }
}

bool Cgroup::memory_exceeded() const {
    if (folders_.empty()) {
        return false;
    }
    const std::string events = read_text(folders_.front() / (version_ == 2 ? "memory.events" : "memory.oom_control"));
    const auto at = events.find("oom_kill ");
    return at != std::string::npos && std::strtoull(events.c_str() + at + 9, nullptr, 10) > 0;
}

}  // namespace cugrade
