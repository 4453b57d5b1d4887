// RESULTS/locks/ID.lock: which batch is grading a student now, so that two batches sharing RESULTS (the tasks of a
// Slurm job array on a cluster's file system, or an instructor's second terminal) never grade one student at once.
// A lock is a file created exclusively (atomic on NFS too) naming its holder; its holder touches it every minute.
// One whose holder is gone (a process of this machine that ended, or a lock untouched for ten minutes) is taken over.
#pragma once

#include <filesystem>
#include <mutex>
#include <set>
#include <string>

namespace cugrade {

class StudentLocks {
public:
    explicit StudentLocks(const std::filesystem::path& results_dir);
    ~StudentLocks();
    StudentLocks(const StudentLocks&) = delete;
    StudentLocks& operator=(const StudentLocks&) = delete;

    // False when another live batch holds the student.
    bool try_lock(const std::string& id);
    void unlock(const std::string& id);
    // Touches every lock held, so that other batches know their holder lives; called every minute.
    void refresh();

    // Whether some batch, this one or another, holds the student now (for `cugrade grade --status`).
    static bool held(const std::filesystem::path& results_dir, const std::string& id);

private:
    std::filesystem::path dir_;
    std::mutex mutex_;
    std::set<std::string> held_;
};

}  // namespace cugrade
