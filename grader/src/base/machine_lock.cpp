#include "base/machine_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

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
    held_ = true;
}

MachineLock::MachineLock(const std::filesystem::path& file, std::chrono::duration<double> patience) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) {
        throw std::runtime_error(fmt::format("cannot lock '{}': {}", file.string(), std::strerror(errno)));
    }
    const auto give_up = std::chrono::steady_clock::now() + patience;
    while (!(held_ = ::flock(fd_, LOCK_EX | LOCK_NB) == 0)) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || std::chrono::steady_clock::now() >= give_up) {
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

MachineLock::~MachineLock() { ::close(fd_); }  // and the lock with it

}  // namespace cugrade
