// Whole files in and out, and one question about paths: small things several parts of cugrade need alike.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cugrade {

std::string read_file(const std::filesystem::path& path);                     // throws std::runtime_error
void write_file(const std::filesystem::path& path, const std::string& text);  // throws std::runtime_error

// The file's size and FNV-1a digest, as cache keys and batch keys name a file's content: "N bytes, fnv1a64 HEX".
std::string file_digest(const std::filesystem::path& path);  // throws std::runtime_error

// Every regular file beneath `folder`, at any depth, sorted: what a key digests of a folder of course files.
std::vector<std::filesystem::path> regular_files_under(const std::filesystem::path& folder);

// Whether `path` is `folder` or lies beneath it (both absolute and normalised).
bool lies_under(const std::filesystem::path& path, const std::filesystem::path& folder);

}  // namespace cugrade
