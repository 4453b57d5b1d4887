#include "course/submission.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/file_io.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

std::string kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a named pipe";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

}  // namespace

bool submission_present(const fs::path& folder, const std::string& name) {
    struct stat info {};
    return ::lstat((folder / name).c_str(), &info) == 0;
}

SubmissionFile read_submission(const fs::path& folder, const std::string& name) {
    SubmissionFile file;
    file.shown = folder / name;
    file.name = name;
    const auto refuse = [&](std::string why) {
        file.refused = fmt::format("{} {}", name, why);
        return file;
    };

    fs::path path = file.shown;
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) {
        return refuse(fmt::format("cannot be read: {}", std::strerror(errno)));
    }
    if (S_ISLNK(info.st_mode)) {
        std::error_code ec;
        const fs::path written = fs::read_symlink(path, ec);
        const fs::path target = fs::canonical(path, ec);
        if (ec) {
            return refuse(fmt::format("is a symbolic link to '{}', which does not exist: submit the file itself",
                                      written.string()));
        }
        const fs::path root = fs::canonical(folder, ec);
        if (ec || !lies_under(target, root)) {
            return refuse(fmt::format(
                "is a symbolic link to '{}', outside the submission folder: cugrade reads only files inside it; "
                "submit the file itself",
                written.string()));
        }
        path = target;
    }
    // No link is followed here (the one above was checked), and a named pipe cannot block the read.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return refuse(fmt::format("cannot be read: {}", std::strerror(errno)));
    }
    const auto close_and = [&](SubmissionFile result) {
        ::close(fd);
        return result;
    };
    if (::fstat(fd, &info) != 0) {
        return close_and(refuse(fmt::format("cannot be read: {}", std::strerror(errno))));
    }
    if (!S_ISREG(info.st_mode)) {
        return close_and(refuse(fmt::format("is {}, not a file of source code", kind_of(info.st_mode))));
    }
    if (static_cast<std::size_t>(info.st_size) > max_submission_bytes) {
        return close_and(refuse(fmt::format("is {} bytes; a submission file may have at most {} bytes", info.st_size,
                                            max_submission_bytes)));
    }
    std::string bytes(static_cast<std::size_t>(info.st_size), '\0');
    std::size_t got = 0;
    while (got < bytes.size()) {
        const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    bytes.resize(got);
    file.bytes = std::move(bytes);
    return close_and(file);
}

}  // namespace cugrade
