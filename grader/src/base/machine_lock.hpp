// A lock every process of the machine sees: an flock on a file, held from construction to destruction. For what the
// machine has one of: the folder a kit's harnesses are compiled in, the GPU's performance counters.
#pragma once

#include <chrono>
#include <filesystem>

namespace cugrade {

class MachineLock {
public:
    // Waits until the lock on `file` (created if missing) is this object's; throws std::runtime_error when the file
    // cannot be opened or locked.
    explicit MachineLock(const std::filesystem::path& file);
    // Waits at most `patience`; held() says whether the lock came.
    MachineLock(const std::filesystem::path& file, std::chrono::duration<double> patience);
    ~MachineLock();
    MachineLock(const MachineLock&) = delete;
    MachineLock& operator=(const MachineLock&) = delete;

    bool held() const { return held_; }

private:
    int fd_ = -1;
    bool held_ = false;
};

}  // namespace cugrade
