// Control groups for sandboxed processes: a memory limit that holds for the whole process tree (and a process-count
// limit that holds for root too), where this machine lets cugrade create groups. cgroup v2 where its memory
// controller is delegated to cugrade's group, else the v1 memory and pids hierarchies where they are writable.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cugrade {

struct CgroupSupport {
    int version = 0;                    // 0: none, 1 or 2
    std::filesystem::path memory_base;  // where groups with a memory limit are created
    std::filesystem::path pids_base;    // where groups with a process limit are created (v1: another hierarchy)
    std::string problem;                // why none, when version is 0
};

// Asked once per process: creates and removes a probe group.
const CgroupSupport& cgroup_support();

// One group per sandboxed process, created before it starts and removed, with whatever is left in it, after it ends.
class Cgroup {
public:
    // Throws std::runtime_error when the group cannot be created although cgroup_support() said it could.
    Cgroup(std::uint64_t memory_bytes, int max_processes);
    ~Cgroup();
    Cgroup(const Cgroup&) = delete;
    Cgroup& operator=(const Cgroup&) = delete;

    // The files the child writes "0" to before exec, which moves it (and later its children) into the group.
    const std::vector<std::string>& procs_files() const { return procs_files_; }

    // Whether the kernel killed a process of the group for using more memory than the limit.
    bool memory_exceeded() const;

    // Kills every process still in the group.
    void kill_all() const;

private:
    std::vector<std::filesystem::path> folders_;
    std::vector<std::string> procs_files_;
    int version_ = 0;
};

}  // namespace cugrade
