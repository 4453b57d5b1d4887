// A lock every process of the machine sees: an flock on a file, held from construction to destruction. For what the
// machine has one of: the folder a kit's harnesses are compiled in, the GPU's performance counters.
#pragma once

#include <filesystem>

namespace cugrade {

class MachineLock {
public:
    // Waits until the lock on `file` (created if missing) is this object's; throws std::runtime_error when the file
    // cannot be opened or locked.
    explicit MachineLock(const std::filesystem::path& file);
    ~MachineLock();
    MachineLock(const MachineLock&) = delete;
    MachineLock& operator=(const MachineLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace cugrade
