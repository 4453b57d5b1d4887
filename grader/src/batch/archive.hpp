// Unpacking a class's archive (.zip, .tar, .tar.gz, .tgz, .tar.bz2, .tar.xz) with libarchive, safely: nothing is
// written outside the target folder, no link is made, and the whole is capped in size and in entries. What is
// refused is named; a bomb stops the unpacking.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cugrade {

struct UnpackLimits {
    std::uint64_t total_bytes = std::uint64_t{2} << 30;  // of all files, unpacked
    std::uint64_t file_bytes = std::uint64_t{64} << 20;  // of one file
    // Every entry read, whatever becomes of it (a file, a folder, a link or anything else left out), and every
    // folder an entry's path makes without naming it: an empty folder still takes a block of disk, and an entry left
    // out still takes reading.
    std::size_t entries = 100000;
    std::size_t path_depth = 32;    // names in one entry's path; a deeper entry is left out
    std::size_t path_bytes = 1024;  // of one entry's path; a longer entry is left out
};

struct UnpackResult {
    std::size_t files = 0;
    std::size_t entries = 0;  // as UnpackLimits::entries counts them
    std::uint64_t bytes = 0;
    std::vector<std::string> refused;  // "PATH: why", for the first entries left out
    std::size_t refused_unnamed = 0;   // entries left out past those named in `refused`
};

// How many entries left out an UnpackResult names; the others are counted.
inline constexpr std::size_t named_refusals = 100;

// Whether `path` names an archive cugrade can read, by its name.
bool is_archive(const std::filesystem::path& path);

// Unpacks `archive` into `target` (created; must not exist). Throws UsageError when the archive cannot be read or
// passes a limit (nothing then stays in `target`), and when this cugrade was built without libarchive.
UnpackResult unpack_archive(const std::filesystem::path& archive, const std::filesystem::path& target,
                            const UnpackLimits& limits = {});

// Writes `folder` as a .tar.gz whose entries all begin with the folder's name: in path order, with no dates, owners
// or users, so that the same files always make the same archive. Throws UsageError when this cugrade was built
// without libarchive, std::runtime_error when the archive cannot be written.
void pack_folder(const std::filesystem::path& folder, const std::filesystem::path& tarball);

}  // namespace cugrade
