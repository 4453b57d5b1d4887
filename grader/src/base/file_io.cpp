#include "base/file_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/hash.hpp"

namespace cugrade {
namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error(fmt::format("cannot read '{}'", path.string()));
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string file_digest(const fs::path& path) {
    const std::string bytes = read_file(path);
    return fmt::format("{} bytes, fnv1a64 {}", bytes.size(), hex64(fnv1a64(bytes)));
}

std::vector<fs::path> regular_files_under(const fs::path& folder) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
        if (entry.is_regular_file()) {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.flush();
    if (!out) {
        throw std::runtime_error(fmt::format("cannot write '{}'", path.string()));
    }
}

bool lies_under(const fs::path& path, const fs::path& folder) {
    const auto [folder_end, path_end] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
    return folder_end == folder.end();
}

}  // namespace cugrade
