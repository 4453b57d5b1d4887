// The build cache: a folder of entries, each named by a hash of its key. key.txt holds the whole key and is compared
// in full, so a hash collision can never serve the wrong build; manifest.txt holds the size and digest of every
// file, so a missing or damaged file is rebuilt, never served. Entries are built in a staging folder and renamed
// into place. The cache is kept under a size limit, least recently used entries going first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/file_io.hpp"
#include "base/scratch_dir.hpp"

namespace cugrade {

// Everything a build depends on, as text. A course file enters as its name, size and digest (never its text: no
// cache file may hold a reference's source); a submission enters whole.
class CacheKey {
public:
    CacheKey& add(const std::string& label, const std::string& value);
    CacheKey& add_file_digest(const std::filesystem::path& path);
    const std::string& text() const { return text_; }
    std::string digest() const;

private:
    std::string text_;
};

class CacheEntry {
public:
    // `cache_dir` empty: the entry is a temporary folder, removed when the last holder of scratch() lets it go.
    CacheEntry(const std::filesystem::path& cache_dir, const std::string& kind, const CacheKey& key);
    ~CacheEntry();  // a build that was not committed leaves no staging folder behind
    CacheEntry(const CacheEntry&) = delete;
    CacheEntry& operator=(const CacheEntry&) = delete;

    // Whether a complete entry of this key is in place; a hit marks the entry as recently used. An entry of this
    // name whose key or files do not match is removed.
    bool hit() const;
    const std::filesystem::path& path() const { return final_; }
    bool temporary() const { return temporary_ != nullptr; }
    std::shared_ptr<ScratchDir> scratch() const { return temporary_; }

    // Whether `file` of the committed entry in `folder` still matches its manifest.
    static bool intact(const std::filesystem::path& folder, const std::string& file);

    // A fresh folder to build in.
    std::filesystem::path start();
    // Records the digests of `files` (relative to the folder) and moves the folder into place, so readers never
    // see a half-built entry.
    void commit(const std::vector<std::string>& files);

private:
    std::string key_;
    std::filesystem::path final_;
    std::filesystem::path staging_;
    std::shared_ptr<ScratchDir> temporary_;
};

// Removes staging folders that no running cugrade is building in, then, while the cache holds more than
// `max_bytes`, the least recently used entries.
void tidy_cache(const std::filesystem::path& cache_dir, std::uint64_t max_bytes);

}  // namespace cugrade
