#include "base/scratch_dir.hpp"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <regex>
#include <stdexcept>

namespace cugrade {
namespace fs = std::filesystem;

ScratchDir::ScratchDir(const std::string& purpose) {
    std::string pattern =
        (fs::temp_directory_path() / ("cugrade-" + purpose + "-" + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error("cannot create a temporary folder in " + fs::temp_directory_path().string());
    }
    path_ = pattern;
}

ScratchDir::~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

void remove_stale_scratch_dirs() {
    static const std::regex name(R"(cugrade-[a-z]+-([0-9]+)-[A-Za-z0-9]{6})");
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
        std::smatch match;
        const std::string file = entry.path().filename().string();
        struct stat info {};
        if (!std::regex_match(file, match, name) || ::lstat(entry.path().c_str(), &info) != 0 ||
            !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid()) {
            continue;
        }
        const auto pid = static_cast<pid_t>(std::stol(match[1]));
        if (::kill(pid, 0) != 0 && errno == ESRCH) {
            fs::remove_all(entry.path(), ec);
        }
    }
}

}  // namespace cugrade
