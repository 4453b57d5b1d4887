// Where a grading's time goes, process by process: one JSON line per harness process the grader ran (its submission,
// the tool it ran under, its cases, how long it took, how long of that it waited for the GPU, how it ended). For an
// instructor tuning a batch (`cugrade grade --trace FILE`); it names hidden cases, so it is never a student's.
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

namespace cugrade {

class RunTrace {
public:
    // Appends to `file`, created if missing; throws std::runtime_error when it cannot be opened.
    explicit RunTrace(const std::filesystem::path& file);
    ~RunTrace();
    RunTrace(const RunTrace&) = delete;
    RunTrace& operator=(const RunTrace&) = delete;

    // Writes `record` as one line, with "at": the seconds since this trace began. Safe from several threads.
    void record(nlohmann::json record);

private:
    std::mutex mutex_;
    std::FILE* file_ = nullptr;
    const std::chrono::steady_clock::time_point began_ = std::chrono::steady_clock::now();
};

}  // namespace cugrade
