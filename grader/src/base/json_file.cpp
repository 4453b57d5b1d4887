#include "base/json_file.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.hpp"

namespace cugrade {
namespace fs = std::filesystem;

std::string json_text(const nlohmann::json& json) {
    return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void write_json_file(const std::string& destination, const nlohmann::json& json, std::ostream& standard_output) {
    const std::string text = json_text(json);
    if (destination == "-") {
        standard_output << text << std::flush;
        return;
    }
    const fs::path path = destination;
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
        const char* what = S_ISLNK(info.st_mode)                            ? "a symbolic link"
                           : S_ISDIR(info.st_mode)                          ? "a folder"
                           : S_ISFIFO(info.st_mode)                         ? "a named pipe"
                           : S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) ? "a device"
                                                                            : "not a regular file";
        throw UsageError(
            fmt::format("--json: '{}' is {}; give a new file, a regular file to replace, or '-'", path.string(), what));
    }
    const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
    std::string partial = (folder / ("." + path.filename().string() + ".XXXXXX")).string();
    const int fd = ::mkstemp(partial.data());  // a new file of its own: O_EXCL, never a link
    if (fd < 0) {
        throw UsageError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(errno)));
    }
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            const int error = errno;
            ::close(fd);
            ::unlink(partial.c_str());
            throw UsageError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(error)));
        }
        written += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 || ::rename(partial.c_str(), path.c_str()) != 0) {
        const int error = errno;
        ::unlink(partial.c_str());
        throw UsageError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(error)));
    }
}

}  // namespace cugrade
