// Checkers kept across a batch's submissions of one exercise (protocol.hpp, "jobs"): a checker under racecheck or
// memcheck serves one submission after another, its device code loaded and its runner met for each, instead of
// compute-sanitizer starting for each submission (its start is most of a sanitizer check's cost, and partly serialised
// by the driver for the whole GPU: docs/performance-history.md). One pool for each GPU of a batch, for every tool and
// exercise; a checker serves one submission at a time, taken from the pool and given back. What a kept checker's job
// may decide is the run loop's rule (CaseRunner::nothing_reported_in_kept_checker): only that the tool has nothing to
// say.
#pragma once

#include <cstddef>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "schedule/gpu_gate.hpp"
#include "sandbox/process.hpp"
#include "base/scratch_dir.hpp"

namespace cugrade {

// A checker that serves jobs, and what it was started with.
struct KeptChecker {
    std::string key;  // its program and tool: only jobs for the same are given to it
    std::unique_ptr<ChildProcess> child;
    std::string token;
    std::string marker;                    // its case marker, and its jobs' end marker's prefix
    std::vector<std::string> protections;  // the checker's own, said when it was ready
    int jobs = 0;                          // jobs served
    GpuGate* gate = nullptr;
};

class CheckerPool {
public:
    // At most `idle_limit` checkers wait between jobs (the oldest ended past it), each serving at most `job_limit`
    // jobs; `gate`: the GPU's gate (null: the GPU is one grading's), held shared while a checker's context ends.
    CheckerPool(std::shared_ptr<GpuGate> gate, std::size_t idle_limit, int job_limit);
    ~CheckerPool();
    CheckerPool(const CheckerPool&) = delete;
    CheckerPool& operator=(const CheckerPool&) = delete;

    // An idle checker for `key`, or null.
    std::unique_ptr<KeptChecker> take(const std::string& key);
    // Back to wait for the next job, or ended where it has served its jobs or too many wait.
    void give_back(std::unique_ptr<KeptChecker> checker);
    // Ends it now, holding the GPU shared while its context goes, as every harness ends.
    void end(std::unique_ptr<KeptChecker> checker) const;

    // The pool's own folder, the kept checkers' working directory.
    const std::filesystem::path& folder() const { return folder_.path(); }
    // The pool's copy of `program`, made once: a checker outlives the grading that started it, and its folder.
    std::filesystem::path program_copy(const std::filesystem::path& program);
    GpuGate* gate() const { return gate_.get(); }

private:
    std::shared_ptr<GpuGate> gate_;
    std::size_t idle_limit_;
    int job_limit_;
    ScratchDir folder_{"checkers"};
    mutable std::mutex mutex_;
    std::deque<std::unique_ptr<KeptChecker>> idle_;
    std::map<std::filesystem::path, std::filesystem::path> copies_;
};

}  // namespace cugrade
