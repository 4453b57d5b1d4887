// Unpacking a class's archive (.zip, .tar, .tar.gz, .tgz, .tar.bz2, .tar.xz) with libarchive, safely: nothing is
// written outside the target folder, no link is made, and the whole is capped in size and file count. What is
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
    std::size_t files = 100000;
};

struct UnpackResult {
    std::size_t files = 0;
    std::uint64_t bytes = 0;
    std::vector<std::string> refused;  // "PATH: why", for entries left out
};

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
