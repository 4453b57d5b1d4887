#include "build/cache.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "build/build.hpp"
#include "base/file_io.hpp"
#include "base/hash.hpp"
#include "base/staging.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// "SIZE DIGEST" of a file's bytes, or "" when it cannot be read.
std::string fingerprint(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return {};
    }
    std::uint64_t hash = fnv1a64("");
    std::uint64_t size = 0;
    char buffer[65536];
    while (in) {
        in.read(buffer, sizeof buffer);
        const auto got = static_cast<std::size_t>(in.gcount());
        hash = fnv1a64(std::string_view(buffer, got), hash);
        size += got;
    }
    return fmt::format("{} {}", size, hex64(hash));
}

// Whether the files of an entry match its manifest: all of them, or only `only`.
bool manifest_holds(const fs::path& entry, const std::string& only = "") {
    std::ifstream manifest(entry / "manifest.txt");
    if (!manifest) {
        return false;
    }
    bool found = only.empty();
    for (std::string line; std::getline(manifest, line);) {
        // "SIZE DIGEST NAME"
        const auto first = line.find(' ');
        const auto second = line.find(' ', first + 1);
        if (first == std::string::npos || second == std::string::npos) {
            return false;
        }
        const std::string name = line.substr(second + 1);
        if (!only.empty() && name != only) {
            continue;
        }
        found = true;
        if (fingerprint(entry / name) != line.substr(0, second)) {
            return false;
        }
    }
    return found;
}

std::uint64_t folder_bytes(const fs::path& folder) {
    std::uint64_t bytes = 0;
    std::error_code ec;
    for (const auto& file : fs::recursive_directory_iterator(folder, ec)) {
        if (file.is_regular_file(ec)) {
            bytes += file.file_size(ec);
        }
    }
    return bytes;
}

}  // namespace

CacheKey& CacheKey::add(const std::string& label, const std::string& value) {
    text_ += fmt::format("{} {}\n{}\n", label, value.size(), value);
    return *this;
}

CacheKey& CacheKey::add_file_digest(const fs::path& path) {
    return add("file " + path.filename().string(), file_digest(path));
}

std::string CacheKey::digest() const { return hex64(fnv1a64(text_)); }

CacheEntry::CacheEntry(const fs::path& cache_dir, const std::string& kind, const CacheKey& key) : key_(key.text()) {
    if (cache_dir.empty()) {
        temporary_ = std::make_shared<ScratchDir>("build");
        final_ = temporary_->path();
    } else {
        // Absolute: the built program is started from another folder.
        final_ = fs::absolute(cache_dir) / fmt::format("{}-{}", kind, key.digest());
    }
}

CacheEntry::~CacheEntry() {
    if (!staging_.empty()) {
        std::error_code ec;
        fs::remove_all(staging_, ec);
    }
}

bool CacheEntry::hit() const {
    if (temporary_) {
        return false;
    }
    std::error_code ec;
    if (!fs::is_regular_file(final_ / "key.txt", ec)) {
        return false;
    }
    std::string stored;
    try {
        stored = read_file(final_ / "key.txt");
    } catch (const std::exception&) {
        return false;
    }
    if (stored != key_ || !manifest_holds(final_)) {
        // Another key under a colliding name, or a damaged entry: rebuilt in its place.
        fs::remove_all(final_, ec);
        return false;
    }
    fs::last_write_time(final_ / "key.txt", fs::file_time_type::clock::now(), ec);
    return true;
}

bool CacheEntry::intact(const fs::path& folder, const std::string& file) { return manifest_holds(folder, file); }

fs::path CacheEntry::start() {
    if (temporary_) {
        return final_;
    }
    fs::create_directories(final_.parent_path());
    staging_ = final_.parent_path() / staging_name(final_.filename().string());
    fs::create_directories(staging_);
    return staging_;
}

void CacheEntry::commit(const std::vector<std::string>& files) {
    const fs::path folder = temporary_ ? final_ : staging_;
    std::string manifest;
    for (const auto& file : files) {
        const std::string print = fingerprint(folder / file);
        if (print.empty()) {
            throw std::runtime_error(fmt::format("cannot read '{}'", (folder / file).string()));
        }
        manifest += print + " " + file + "\n";
    }
    write_file(folder / "manifest.txt", manifest);
    write_file(folder / "key.txt", key_);
    if (temporary_) {
        return;
    }
    std::error_code ec;
    fs::rename(staging_, final_, ec);
    if (ec && !hit()) {
        // A damaged entry, or one of another key, holds the name: this build replaces it.
        fs::remove_all(final_, ec);
        fs::rename(staging_, final_, ec);
    }
    // Otherwise another cugrade committed the same entry first, and its copy serves.
    fs::remove_all(staging_, ec);
}

std::uint64_t default_cache_limit() {
    if (const char* text = std::getenv("CUGRADE_CACHE_MIB"); text != nullptr && *text != '\0') {
        char* end = nullptr;
        const unsigned long long mib = std::strtoull(text, &end, 10);
        if (end != nullptr && *end == '\0' && mib > 0) {
            return static_cast<std::uint64_t>(mib) << 20;
        }
    }
    return std::uint64_t{5} << 30;
}

void tidy_cache(const fs::path& cache_dir, std::uint64_t max_bytes) {
    struct Entry {
        fs::path path;
        fs::file_time_type used;
        std::uint64_t bytes;
    };
    std::vector<Entry> entries;
    std::uint64_t total = 0;
    std::error_code ec;
    for (const auto& item : fs::directory_iterator(cache_dir, ec)) {
        const std::string name = item.path().filename().string();
        if (is_staging_name(name)) {
            if (staging_abandoned(item.path())) {
                fs::remove_all(item.path(), ec);
            }
            continue;
        }
        if (!item.is_directory(ec) || name.front() == '.') {
            continue;
        }
        const auto used = fs::last_write_time(item.path() / "key.txt", ec);
        const std::uint64_t bytes = folder_bytes(item.path());
        entries.push_back({item.path(), ec ? fs::file_time_type::min() : used, bytes});
        total += bytes;
    }
    if (total <= max_bytes) {
        return;
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
    for (const auto& entry : entries) {
        if (total <= max_bytes / 10 * 9) {
            break;
        }
        fs::remove_all(entry.path, ec);
        total -= entry.bytes;
    }
}

}  // namespace cugrade
