#include "student_locks.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "file_io.hpp"
#include "staging.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

constexpr auto stale_after = std::chrono::minutes(10);

std::string host_name() {
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0' ? std::string(name) : std::string("host");
}

std::string holder_text() { return fmt::format("{} {}\n", host_name(), ::getpid()); }

fs::path lock_path(const fs::path& dir, const std::string& id) { return dir / (id + ".lock"); }

// Whether the holder named in a lock is gone.
bool abandoned(const fs::path& lock) {
    std::error_code ec;
    const auto modified = fs::last_write_time(lock, ec);
    if (ec) {
        return false;  // gone already: the caller tries again
    }
    std::istringstream holder(read_file(lock));
    std::string host;
    pid_t pid = 0;
    holder >> host >> pid;
    if (host == host_name() && pid > 0) {
        return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
    }
    return fs::file_time_type::clock::now() - modified > stale_after;
}

}  // namespace

StudentLocks::StudentLocks(const fs::path& results_dir) : dir_(results_dir / "locks") {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) {
        throw std::runtime_error(fmt::format("cannot create '{}': {}", dir_.string(), ec.message()));
    }
}

StudentLocks::~StudentLocks() {
    std::lock_guard lock(mutex_);
    std::error_code ec;
    for (const auto& id : held_) {
        fs::remove(lock_path(dir_, id), ec);
    }
}

bool StudentLocks::try_lock(const std::string& id) {
    const fs::path path = lock_path(dir_, id);
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            const std::string text = holder_text();
            const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
            ::close(fd);
            if (!written) {
                ::unlink(path.c_str());
                throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
            }
            std::lock_guard lock(mutex_);
            held_.insert(id);
            return true;
        }
        if (errno != EEXIST) {
            throw std::runtime_error(fmt::format("cannot create '{}': {}", path.string(), std::strerror(errno)));
        }
        if (!abandoned(path)) {
            return false;
        }
        // Taken over by renaming it away first: of two batches that both found it abandoned, one renames it.
        const fs::path away = dir_ / staging_name(id + ".lock");
        if (::rename(path.c_str(), away.c_str()) != 0) {
            continue;
        }
        ::unlink(away.c_str());
    }
    return false;
}

void StudentLocks::unlock(const std::string& id) {
    std::lock_guard lock(mutex_);
    if (held_.erase(id) > 0) {
        std::error_code ec;
        fs::remove(lock_path(dir_, id), ec);
    }
}

void StudentLocks::refresh() {
    std::lock_guard lock(mutex_);
    std::error_code ec;
    for (const auto& id : held_) {
        fs::last_write_time(lock_path(dir_, id), fs::file_time_type::clock::now(), ec);
    }
}

bool StudentLocks::held(const fs::path& results_dir, const std::string& id) {
    const fs::path path = lock_path(results_dir / "locks", id);
    std::error_code ec;
    return fs::exists(path, ec) && !abandoned(path);
}

}  // namespace cugrade
