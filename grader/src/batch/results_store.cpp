// A student's results, written whole or not at all (results_store.hpp).
#include "batch/results_store.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <stdexcept>

#include "base/file_io.hpp"
#include "base/staging.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

constexpr const char* key_file = "key.txt";

void sync_file(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

}  // namespace

void write_file_atomically(const fs::path& path, const std::string& text) {
    const fs::path staging = path.parent_path() / staging_name(path.filename().string());
    write_file(staging, text);
    sync_file(staging);
    std::error_code ec;
    fs::rename(staging, path, ec);
    if (ec) {
        fs::remove(staging);
        throw std::runtime_error(fmt::format("cannot write '{}': {}", path.string(), ec.message()));
    }
}

ResultsStore::ResultsStore(const fs::path& results_dir) : students_(results_dir / "students") {
    std::error_code ec;
    fs::create_directories(students_, ec);
    if (ec) {
        throw std::runtime_error(fmt::format("cannot create '{}': {}", students_.string(), ec.message()));
    }
    for (const auto& entry : fs::directory_iterator(students_)) {
        // A batch killed while writing: its folder was never in place. Another batch's, still writing, stays.
        if (is_staging_name(entry.path().filename().string()) && staging_abandoned(entry.path())) {
            fs::remove_all(entry.path(), ec);
        }
    }
}

std::optional<std::string> ResultsStore::key(const std::string& id) const {
    std::error_code ec;
    const fs::path file = students_ / id / key_file;
    if (!fs::is_regular_file(file, ec)) {
        return std::nullopt;
    }
    return read_file(file);
}

void ResultsStore::write(const std::string& id, const std::string& key,
                         const std::map<std::string, std::string>& files) const {
    const fs::path staging = students_ / staging_name(id);
    fs::create_directory(staging);
    for (const auto& [name, text] : files) {
        write_file(staging / name, text);
        sync_file(staging / name);
    }
    write_file(staging / key_file, key);
    sync_file(staging / key_file);
    const fs::path final_path = students_ / id;
    std::error_code ec;
    if (fs::exists(final_path, ec)) {
        // The old folder and the new change places in one step; the old one, now at the staging name, goes.
        if (::syscall(SYS_renameat2, AT_FDCWD, staging.c_str(), AT_FDCWD, final_path.c_str(), RENAME_EXCHANGE) == 0) {
            fs::remove_all(staging, ec);
            return;
        }
        if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
            const std::string why = std::strerror(errno);
            fs::remove_all(staging, ec);
            throw std::runtime_error(fmt::format("cannot replace '{}': {}", final_path.string(), why));
        }
        // NFS and some cluster file systems cannot exchange: the old folder moves aside first. Killed in between,
        // the student has no results and a rerun grades them again; never half of either.
        const fs::path old = students_ / staging_name("old-" + id);
        fs::rename(final_path, old, ec);
        if (ec) {
            fs::remove_all(staging, ec);
            throw std::runtime_error(fmt::format("cannot replace '{}': {}", final_path.string(), ec.message()));
        }
        fs::rename(staging, final_path, ec);
        if (ec) {
            const std::string why = ec.message();
            fs::rename(old, final_path, ec);  // the old results back in place
            fs::remove_all(staging, ec);
            throw std::runtime_error(fmt::format("cannot write '{}': {}", final_path.string(), why));
        }
        fs::remove_all(old, ec);
        return;
    }
    fs::rename(staging, final_path, ec);
    if (ec) {
        fs::remove_all(staging, ec);
        throw std::runtime_error(fmt::format("cannot write '{}': {}", final_path.string(), ec.message()));
    }
}

std::vector<std::string> ResultsStore::ids() const {
    std::vector<std::string> ids;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(students_, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_directory(ec) && !is_staging_name(name) && fs::exists(entry.path() / key_file, ec)) {
            ids.push_back(name);
        }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

}  // namespace cugrade
