#include "cugrade/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "protocol.hpp"

extern char** environ;

namespace cugrade {
namespace {

constexpr int channel_fd_in_child = 3;

// The process groups cugrade has running, so that an interrupted cugrade takes them down with it. Signal handlers
// may only touch lock-free atomics.
constexpr std::size_t max_children = 64;
std::array<std::atomic<pid_t>, max_children> running_groups{};

void remember_group(pid_t group) {
    for (auto& slot : running_groups) {
        pid_t empty = 0;
        if (slot.compare_exchange_strong(empty, group)) {
            return;
        }
    }
}

void forget_group(pid_t group) {
    for (auto& slot : running_groups) {
        pid_t expected = group;
        slot.compare_exchange_strong(expected, 0);
    }
}

extern "C" void kill_groups_and_reraise(int signal) {
    for (auto& slot : running_groups) {
        if (const pid_t group = slot.load(); group > 0) {
            ::kill(-group, SIGKILL);
        }
    }
    ::signal(signal, SIG_DFL);
    ::raise(signal);
}

void close_fd(int& fd) {
    if (fd >= 0) {
        ::close(fd);
        fd = -1;
    }
}

std::array<int, 2> make_pipe() {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
        throw std::runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
    }
    return fds;
}

ExitStatus decode(int wait_status) {
    ExitStatus status;
    if (WIFEXITED(wait_status)) {
        status.code = WEXITSTATUS(wait_status);
    } else if (WIFSIGNALED(wait_status)) {
        status.signal = WTERMSIG(wait_status);
    }
    return status;
}

int milliseconds_until(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 100));
}

}  // namespace

std::string ExitStatus::describe() const {
    if (timed_out) {
        return "timed out";
    }
    if (signal != 0) {
        const char* abbrev = sigabbrev_np(signal);
        return fmt::format("was killed by signal {} (SIG{})", signal, abbrev != nullptr ? abbrev : "?");
    }
    return fmt::format("exited with code {}", code);
}

ChildProcess::ChildProcess(const ProcessOptions& options) : output_limit_(options.output_limit) {
    if (options.argv.empty()) {
        throw std::runtime_error("cannot start a process without a command");
    }
    // Everything the child needs is prepared before fork: between fork and exec only async-signal-safe calls.
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry = *e;
        bool overridden = false;
        for (const auto& [key, value] : options.environment) {
            overridden = overridden || entry.rfind(key + "=", 0) == 0;
        }
        if (!overridden) {
            env_storage.push_back(entry);
        }
    }
    for (const auto& [key, value] : options.environment) {
        env_storage.push_back(key + "=" + value);
    }
    if (options.result_channel) {
        env_storage.push_back(fmt::format("{}={}", protocol::result_fd_env, channel_fd_in_child));
    }
    std::vector<char*> envp;
    for (auto& entry : env_storage) {
        envp.push_back(entry.data());
    }
    envp.push_back(nullptr);
    std::vector<char*> argv;
    for (const auto& arg : options.argv) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    const std::string cwd = options.working_directory.string();

    auto output = make_pipe();
    auto channel = options.result_channel ? make_pipe() : std::array<int, 2>{-1, -1};
    auto exec_error = make_pipe();  // carries errno if exec fails; closes by itself (O_CLOEXEC) when exec succeeds

    pid_ = ::fork();
    if (pid_ < 0) {
        throw std::runtime_error(fmt::format("cannot start '{}': {}", options.argv[0], std::strerror(errno)));
    }
    if (pid_ == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // should cugrade itself be killed, its child goes too
        const int null_fd = ::open("/dev/null", O_RDONLY);
        ::dup2(null_fd, 0);
        ::dup2(output[1], 1);
        ::dup2(output[1], 2);
        if (channel[1] >= 0) {
            ::dup2(channel[1], channel_fd_in_child);
        }
        if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
            const int error = errno;
            (void)!::write(exec_error[1], &error, sizeof error);
            ::_exit(127);
        }
        ::execvpe(argv[0], argv.data(), envp.data());
        const int error = errno;
        (void)!::write(exec_error[1], &error, sizeof error);
        ::_exit(127);
    }
    ::setpgid(pid_, pid_);  // also from here, so the group exists before either side goes on
    remember_group(pid_);
    ::close(output[1]);
    ::close(exec_error[1]);
    if (channel[1] >= 0) {
        ::close(channel[1]);
    }
    output_fd_ = output[0];
    channel_fd_ = channel[0];

    int error = 0;
    const ssize_t got = ::read(exec_error[0], &error, sizeof error);
    ::close(exec_error[0]);
    if (got == static_cast<ssize_t>(sizeof error)) {
        ::waitpid(pid_, nullptr, 0);
        forget_group(pid_);
        pid_ = -1;
        close_fd(output_fd_);
        close_fd(channel_fd_);
        throw std::runtime_error(fmt::format("cannot run '{}': {}", options.argv[0], std::strerror(error)));
    }
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0 && !status_) {
        kill_group();
        ::waitpid(pid_, nullptr, 0);
    }
    if (pid_ > 0) {
        kill_group();  // leftovers of the group, if any
        forget_group(pid_);
    }
    close_fd(output_fd_);
    close_fd(channel_fd_);
}

void ChildProcess::kill_group() {
    if (pid_ > 0) {
        ::kill(-pid_, SIGKILL);
    }
}

void ChildProcess::read_output() {
    std::array<char, 65536> buffer{};
    const ssize_t n = ::read(output_fd_, buffer.data(), buffer.size());
    if (n <= 0) {
        close_fd(output_fd_);
        return;
    }
    const std::size_t room = output_limit_ > output_.size() ? output_limit_ - output_.size() : 0;
    const std::size_t kept = std::min(room, static_cast<std::size_t>(n));
    output_.append(buffer.data(), kept);
    output_dropped_ += static_cast<std::size_t>(n) - kept;
}

void ChildProcess::poll_once(int timeout_ms) {
    if (output_fd_ < 0 && channel_fd_ < 0) {
        ::usleep(static_cast<useconds_t>(timeout_ms) * 1000);
        return;
    }
    std::array<pollfd, 2> fds{pollfd{output_fd_, POLLIN, 0}, pollfd{channel_fd_, POLLIN, 0}};
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
        throw std::runtime_error(fmt::format("poll failed: {}", std::strerror(errno)));
    }
    if (fds[0].revents != 0) {
        read_output();
    }
    if (fds[1].revents != 0) {
        std::array<char, 65536> buffer{};
        const ssize_t n = ::read(channel_fd_, buffer.data(), buffer.size());
        if (n <= 0) {
            close_fd(channel_fd_);
        } else {
            channel_buffer_.append(buffer.data(), static_cast<std::size_t>(n));
        }
    }
}

void ChildProcess::reap() {
    int wait_status = 0;
    if (!status_ && ::waitpid(pid_, &wait_status, WNOHANG) == pid_) {
        status_ = decode(wait_status);
    }
}

ChildProcess::Next ChildProcess::next_line(std::string& line, Clock::time_point deadline) {
    while (true) {
        if (const std::size_t end = channel_buffer_.find('\n'); end != std::string::npos) {
            line = channel_buffer_.substr(0, end);
            channel_buffer_.erase(0, end + 1);
            return Next::line;
        }
        if (channel_fd_ < 0) {
            return Next::closed;
        }
        if (Clock::now() >= deadline) {
            return Next::deadline;
        }
        poll_once(milliseconds_until(deadline));
    }
}

ExitStatus ChildProcess::finish(Clock::time_point deadline) {
    while (!status_ && Clock::now() < deadline) {
        poll_once(std::min(10, milliseconds_until(deadline)));
        reap();
    }
    if (!status_) {
        kill_group();
        int wait_status = 0;
        ::waitpid(pid_, &wait_status, 0);
        status_ = decode(wait_status);
        status_->timed_out = true;
    }
    // The group's leftovers go with it; what they already wrote is read for a short grace period.
    kill_group();
    const auto grace = Clock::now() + std::chrono::milliseconds(200);
    while (output_fd_ >= 0 && Clock::now() < grace) {
        poll_once(milliseconds_until(grace));
    }
    return *status_;
}

void kill_children_on_interrupt() {
    for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
        ::signal(signal, kill_groups_and_reraise);
    }
}

ProcessResult run_process(const ProcessOptions& options, std::chrono::duration<double> timeout) {
    ChildProcess child(options);
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
    ProcessResult result;
    result.status = child.finish(deadline);
    result.output = child.output();
    result.output_truncated = child.output_truncated();
    return result;
}

}  // namespace cugrade
