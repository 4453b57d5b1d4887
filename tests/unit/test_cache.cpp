// The build cache's housekeeping: entries verified before they are served, staging folders of dead builds removed,
// the size limit kept by removing the least recently used entries.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "build/cache.hpp"
#include "catch.hpp"
#include "fresh_folder.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

fs::path fresh(const std::string& name) { return fresh_folder("cache", name); }

fs::path commit_entry(const fs::path& cache, const std::string& key_text, std::size_t bytes) {
    CacheKey key;
    key.add("test", key_text);
    CacheEntry entry(cache, "test", key);
    const fs::path dir = entry.start();
    std::ofstream(dir / "data") << std::string(bytes, 'x');
    entry.commit({"data"});
    return entry.path();
}

}  // namespace

TEST_CASE("a committed entry is a hit until one of its files changes or goes") {
    const fs::path cache = fresh("verify");
    const fs::path path = commit_entry(cache, "a", 100);
    CacheKey key;
    key.add("test", "a");
    CHECK(CacheEntry(cache, "test", key).hit());
    fs::resize_file(path / "data", 50);
    CHECK_FALSE(CacheEntry(cache, "test", key).hit());
    CHECK_FALSE(fs::exists(path));  // removed, to be rebuilt
    commit_entry(cache, "a", 100);
    fs::remove(path / "manifest.txt");
    CHECK_FALSE(CacheEntry(cache, "test", key).hit());
}

TEST_CASE("an entry that is never committed leaves no staging folder") {
    const fs::path cache = fresh("abandoned");
    {
        CacheKey key;
        key.add("test", "b");
        CacheEntry entry(cache, "test", key);
        std::ofstream(entry.start() / "half") << "half";
    }
    CHECK(fs::is_empty(cache));
}

TEST_CASE("tidying removes the staging folders of builds that died, and keeps the cache under its limit") {
    const fs::path cache = fresh("tidy");
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    // pid 999999999 runs nowhere: a build killed before it could clean up.
    fs::create_directories(cache / (std::string(".staging-") + host + "-999999999-0000abcd-test-x"));
    fs::create_directories(cache /
                           (std::string(".staging-") + host + "-" + std::to_string(::getpid()) + "-0000abcd-test-y"));
    const fs::path old_entry = commit_entry(cache, "old", 4000);
    fs::last_write_time(old_entry / "key.txt", fs::file_time_type::clock::now() - std::chrono::hours(2));
    const fs::path new_entry = commit_entry(cache, "new", 4000);
    tidy_cache(cache, 6000);
    CHECK_FALSE(fs::exists(cache / (std::string(".staging-") + host + "-999999999-0000abcd-test-x")));
    CHECK(
        fs::exists(cache / (std::string(".staging-") + host + "-" + std::to_string(::getpid()) + "-0000abcd-test-y")));
    CHECK_FALSE(fs::exists(old_entry));
    CHECK(fs::exists(new_entry));
}
