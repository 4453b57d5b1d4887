#include "machine_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace cugrade {

MachineLock::MachineLock(const std::filesystem::path& file) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    int locked = -1;
    if (fd_ >= 0) {
        do {
            locked = ::flock(fd_, LOCK_EX);
        } while (locked != 0 && errno == EINTR);
    }
    if (locked != 0) {
        const std::string why = std::strerror(errno);
        if (fd_ >= 0) {
            ::close(fd_);
        }
        throw std::runtime_error(fmt::format("cannot lock '{}': {}", file.string(), why));
    }
}

MachineLock::~MachineLock() { ::close(fd_); }  // and the lock with it

}  // namespace cugrade
