// Private temporary folders (a run's plan files, a build without a cache), removed with everything in them
// afterwards. Their names carry the process id, so that the folders of a cugrade that was killed can be found and
// removed by the next one.
#pragma once

#include <filesystem>
#include <string>

namespace cugrade {

class ScratchDir {
public:
    // A new folder "cugrade-PURPOSE-PID-XXXXXX" in the system's temporary folder. Throws std::runtime_error.
    explicit ScratchDir(const std::string& purpose = "run");
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// Removes this user's scratch folders whose cugrade is no longer running (killed before it could clean up).
void remove_stale_scratch_dirs();

}  // namespace cugrade
