#include "batch/student_locks.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/file_io.hpp"
#include "base/staging.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

constexpr auto stale_after = std::chrono::minutes(10);

std::string holder_text() { return fmt::format("{} {}\n", machine_name(), ::getpid()); }

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
    if (host == machine_name() && pid > 0) {
        return process_ended(pid);
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
    // What a batch killed while taking a lock left beside it.
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        if (is_staging_name(entry.path().filename().string()) && staging_abandoned(entry.path())) {
            fs::remove(entry.path(), ec);
        }
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
    // Written whole beside it, then linked into place: link fails when the lock exists (on NFS too), and a lock is
    // never seen without its holder, even when cugrade is killed while taking it.
    const fs::path written = dir_ / staging_name(id + ".lock");
    write_file(written, holder_text());
    const auto discard = [&] { ::unlink(written.c_str()); };
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (::link(written.c_str(), path.c_str()) == 0) {
            discard();
            std::lock_guard lock(mutex_);
            held_.insert(id);
            return true;
        }
        if (errno != EEXIST) {
            const std::string why = std::strerror(errno);
            discard();
            throw std::runtime_error(fmt::format("cannot create '{}': {}", path.string(), why));
        }
        if (!abandoned(path)) {
            break;
        }
        // Taken over by renaming it away first: of two batches that both found it abandoned, one renames it.
        const fs::path away = dir_ / staging_name(id + ".abandoned");
        if (::rename(path.c_str(), away.c_str()) == 0) {
            ::unlink(away.c_str());
        }
    }
    discard();
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
