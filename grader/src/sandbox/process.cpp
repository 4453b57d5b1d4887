#include "sandbox/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "sandbox/sandbox.hpp"
#include "protocol.hpp"

extern char** environ;

namespace cugrade {
namespace {

constexpr int channel_fd_in_child = 3;
// From fork to exec: the sandbox's set-up, a few milliseconds on an idle machine.
constexpr int start_seconds = 120;
constexpr int peer_fd_in_child = 4;

// The process groups cugrade has running, so that an interrupted cugrade takes them down with it. Signal handlers
// may only touch lock-free atomics, hence a fixed table: far more slots than a batch runs children at once, and a
// child that finds none is refused rather than left untracked.
constexpr std::size_t max_children = 4096;
std::array<std::atomic<pid_t>, max_children> running_groups{};

bool remember_group(pid_t group) {
    for (auto& slot : running_groups) {
        pid_t empty = 0;
        if (slot.compare_exchange_strong(empty, group)) {
            return true;
        }
    }
    return false;
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

// Both ends read and write: the result channel, on which the grader also answers the harness.
std::array<int, 2> make_socket_pair() {
    std::array<int, 2> fds{};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.data()) != 0) {
        throw std::runtime_error(fmt::format("cannot create a socket pair: {}", std::strerror(errno)));
    }
    return fds;
}

// What the child reports on the error pipe when it cannot exec: errno, and what failed before exec if anything
// did (a sandbox step). Written in one write, well under PIPE_BUF, so it arrives whole.
struct ChildFailure {
    int error = 0;
    char what[120] = {};
};

[[noreturn]] void fail_in_child(int pipe_fd, int error, const char* what) {
    ChildFailure failure;
    failure.error = error;
    for (std::size_t i = 0; what != nullptr && what[i] != '\0' && i + 1 < sizeof failure.what; ++i) {
        failure.what[i] = what[i];
    }
    (void)!::write(pipe_fd, &failure, sizeof failure);
    ::_exit(127);
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

// The child's environment: cugrade's own (none of it for a sandboxed child) less what `environment` sets, then
// `environment`, then the result channel's number where it has one.
std::vector<std::string> environment_entries(const std::vector<std::pair<std::string, std::string>>& environment,
                                             bool inherit, bool result_channel) {
    std::vector<std::string> env_storage;
    if (inherit) {
        for (char** e = environ; *e != nullptr; ++e) {
            const std::string entry = *e;
            bool overridden = false;
            for (const auto& [key, value] : environment) {
                overridden = overridden || entry.rfind(key + "=", 0) == 0;
            }
            if (!overridden) {
                env_storage.push_back(entry);
            }
        }
    }
    for (const auto& [key, value] : environment) {
        env_storage.push_back(key + "=" + value);
    }
    if (result_channel) {
        env_storage.push_back(fmt::format("{}={}", protocol::result_fd_env, channel_fd_in_child));
    }
    return env_storage;
}

// cugrade's copy of the peer's descriptor for the child to take, or -1 where it has none.
int peer_copy(const ProcessOptions& options) {
    // Above the descriptors the child sets up, so that setting them up cannot overwrite it.
    const int peer_fd = options.peer_fd >= 0 ? ::fcntl(options.peer_fd, F_DUPFD_CLOEXEC, 10) : -1;
    if (options.peer_fd >= 0 && peer_fd < 0) {
        throw std::runtime_error(
            fmt::format("cannot pass a channel to '{}': {}", options.argv[0], std::strerror(errno)));
    }
    return peer_fd;
}

// The strings as exec takes them, ending in a null pointer; they point into `strings`, which must outlive them.
std::vector<char*> exec_array(std::vector<std::string>& strings) {
    std::vector<char*> pointers;
    for (auto& entry : strings) {
        pointers.push_back(entry.data());
    }
    pointers.push_back(nullptr);
    return pointers;
}

// The descriptors made for a child before fork: both ends of each.
struct ChildPipes {
    std::array<int, 2> output;
    std::array<int, 2> channel;  // {-1, -1} without a result channel
    // Carries a ChildFailure if the child cannot exec; closes by itself (O_CLOEXEC) when exec succeeds.
    std::array<int, 2> exec_error;
};

ChildPipes make_child_pipes(bool result_channel) {
    ChildPipes pipes;
    pipes.output = make_pipe();
    pipes.channel = result_channel ? make_socket_pair() : std::array<int, 2>{-1, -1};
    pipes.exec_error = make_pipe();
    return pipes;
}

// All the child uses between fork and exec, prepared before fork.
struct ChildSide {
    const SandboxLaunch* sandbox;
    pid_t parent;
    const ChildPipes& pipes;
    int peer_fd;
    const std::string& cwd;
    char* const* argv;
    char* const* envp;
};

// The child's process group (and session), tied to cugrade's life. Async-signal-safe.
void join_own_group(const ChildSide& child) {
    if (child.sandbox != nullptr) {
        // A session of its own too: no controlling terminal to push input into. Its group id is its pid,
        // like setpgid's; the parent waits on the error pipe, so the group exists before it goes on.
        if (::setsid() < 0) {
            fail_in_child(child.pipes.exec_error[1], errno, "setsid failed");
        }
    } else {
        ::setpgid(0, 0);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // should cugrade itself be killed, its child goes too
    // It was, before the line above (a child in a pid namespace of its own sees no parent: 0).
    if (const pid_t now = ::getppid(); now != child.parent && now != 0) {
        ::_exit(127);
    }
}

// Standard input from /dev/null, output to the pipe, the channel and the peer at their numbers, nothing else. Async-
// signal-safe.
void set_child_descriptors(const ChildSide& child) {
    const auto& [output, channel, exec_error] = child.pipes;
    const int peer_fd = child.peer_fd;
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, 0);
    ::dup2(output[1], 1);
    ::dup2(output[1], 2);
    if (channel[1] >= 0) {
        ::dup2(channel[1], channel_fd_in_child);
    }
    if (peer_fd >= 0) {
        ::dup2(peer_fd, peer_fd_in_child);
    }
    // Nothing else of cugrade's open files reaches the program (another grading's pipes, the cache), nor what
    // cugrade's own parent left open: a program with a peer and no result channel (a runner) finds nothing at
    // the channel's number either.
    if (channel[1] < 0 && peer_fd >= 0) {
        ::fcntl(channel_fd_in_child, F_SETFD, FD_CLOEXEC);
    }
    const unsigned first_closed = peer_fd >= 0 ? peer_fd_in_child + 1 : channel[1] >= 0 ? channel_fd_in_child + 1 : 3;
    if (::syscall(SYS_close_range, first_closed, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        for (int fd = static_cast<int>(first_closed); fd < 4096; ++fd) {
            if (fd != exec_error[1]) {
                ::fcntl(fd, F_SETFD, FD_CLOEXEC);
            }
        }
    }
}

// The child's side of fork, up to exec: only async-signal-safe calls.
[[noreturn]] void run_child(const ChildSide& child) {
    const SandboxLaunch* sandbox = child.sandbox;
    const int exec_error = child.pipes.exec_error[1];
    join_own_group(child);
    if (sandbox != nullptr) {
        // In a pid namespace, this returns in the program's process only; its init waits there.
        if (const char* what = sandbox->enter_namespaces(); what != nullptr) {
            fail_in_child(exec_error, errno, what);
        }
    }
    set_child_descriptors(child);
    if (!child.cwd.empty() && ::chdir(child.cwd.c_str()) != 0) {
        fail_in_child(exec_error, errno, nullptr);
    }
    if (sandbox != nullptr) {
        if (const char* what = sandbox->enter(); what != nullptr) {
            fail_in_child(exec_error, errno, what);
        }
    }
    ::execvpe(child.argv[0], child.argv, child.envp);
    fail_in_child(
        exec_error, errno,
        sandbox != nullptr && sandbox->mode() == SandboxPolicy::Mode::bubblewrap ? "cannot run bwrap" : nullptr);
}

// What the child's error pipe carried when it closed or had something (nothing: exec succeeded), into `failure`;
// nullopt where it stayed silent past start_seconds.
std::optional<ssize_t> read_exec_error(int exec_error, ChildFailure& failure) {
    ssize_t got = 0;
    pollfd started{exec_error, POLLIN, 0};
    const auto give_up = Clock::now() + std::chrono::seconds(start_seconds);
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count();
        const int ready = ::poll(&started, 1, static_cast<int>(std::max<long long>(left, 0)));
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready == 0) {
            return std::nullopt;
        }
        do {
            got = ::read(exec_error, &failure, sizeof failure);
        } while (got < 0 && errno == EINTR);
        return got;
    }
}

}  // namespace

std::string ExitStatus::describe() const {
    if (limit == "output") {
        return limit_amount.empty() ? "printed too much and was stopped"
                                    : fmt::format("printed more than {} and was stopped", limit_amount);
    }
    if (limit == "cpu") {
        return limit_amount.empty() ? "used too much CPU time and was stopped"
                                    : fmt::format("used more than {} of CPU time and was stopped", limit_amount);
    }
    if (limit == "memory") {
        return limit_amount.empty() ? "used too much memory and was stopped"
                                    : fmt::format("used more than {} of memory and was stopped", limit_amount);
    }
    if (limit == "file size") {
        return limit_amount.empty() ? "wrote too large a file and was stopped"
                                    : fmt::format("wrote a file larger than {} and was stopped", limit_amount);
    }
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
    std::vector<std::string> command = options.argv;
    auto environment = options.environment;
    std::string cwd = options.working_directory.string();
    if (options.sandbox.enabled) {
        sandbox_ = std::make_unique<SandboxLaunch>(options.sandbox, command, environment);
        cwd = options.sandbox.work_dir.string();
        output_kill_bytes_ = options.sandbox.output_kill_bytes;
        cpu_seconds_ = options.sandbox.cpu_seconds;
        file_bytes_ = options.sandbox.file_bytes;
        memory_bytes_ = options.sandbox.memory_bytes;
    }
    std::vector<std::string> env_storage = environment_entries(environment, !sandbox_, options.result_channel);
    const int peer_fd = peer_copy(options);
    if (peer_fd >= 0) {
        env_storage.push_back(fmt::format("{}={}", options.peer_fd_env, peer_fd_in_child));
    }
    const std::vector<char*> envp = exec_array(env_storage);
    const std::vector<char*> argv = exec_array(command);
    const ChildPipes pipes = make_child_pipes(options.result_channel);

    const SandboxLaunch* sandbox = sandbox_.get();
    const ChildSide child{sandbox, ::getpid(), pipes, peer_fd, cwd, argv.data(), envp.data()};
    pid_ = sandbox != nullptr ? sandbox->spawn() : ::fork();
    if (pid_ < 0) {
        throw std::runtime_error(fmt::format("cannot start '{}': {}", options.argv[0], std::strerror(errno)));
    }
    if (pid_ == 0) {
        run_child(child);
    }
    if (sandbox == nullptr) {
        ::setpgid(pid_, pid_);  // also from here, so the group exists before either side goes on
    }
    const bool tracked = remember_group(pid_);
    ::close(pipes.output[1]);
    ::close(pipes.exec_error[1]);
    if (pipes.channel[1] >= 0) {
        ::close(pipes.channel[1]);
    }
    if (peer_fd >= 0) {
        ::close(peer_fd);
    }
    output_fd_ = pipes.output[0];
    channel_fd_ = pipes.channel[0];
    await_exec(pipes.exec_error[0], options.argv[0], tracked);
}

void ChildProcess::await_exec(int exec_error, const std::string& program, bool tracked) {
    // Until exec the child runs cugrade's own code (the sandbox's set-up); should that ever hang, the start fails
    // instead of the grading.
    ChildFailure failure;
    const std::optional<ssize_t> got = read_exec_error(exec_error, failure);
    if (!got) {
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        forget_group(pid_);
        pid_ = -1;
        ::close(exec_error);
        close_fd(output_fd_);
        close_fd(channel_fd_);
        throw std::runtime_error(
            fmt::format("cannot start '{}': it did not get as far as running within {} s", program, start_seconds));
    }
    ::close(exec_error);
    if (*got > 0) {
        ::waitpid(pid_, nullptr, 0);
        forget_group(pid_);
        pid_ = -1;
        close_fd(output_fd_);
        close_fd(channel_fd_);
        failure.what[sizeof failure.what - 1] = '\0';
        if (failure.what[0] == '\0') {
            throw std::runtime_error(fmt::format("cannot run '{}': {}", program, std::strerror(failure.error)));
        }
        throw std::runtime_error(
            fmt::format("cannot sandbox '{}': {}: {}", program, failure.what, std::strerror(failure.error)));
    }
    if (!tracked) {
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
        close_fd(output_fd_);
        close_fd(channel_fd_);
        throw std::runtime_error(
            fmt::format("cannot start '{}': cugrade already runs {} process groups", program, max_children));
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

bool ChildProcess::reply(std::string_view bytes) {
    if (channel_fd_ < 0) {
        return false;
    }
    while (!bytes.empty()) {
        const ssize_t sent = ::send(channel_fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) {
            continue;
        }
        if (sent <= 0) {
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
}

bool ChildProcess::reply_with_descriptors(std::string_view bytes, const std::vector<int>& descriptors) {
    if (channel_fd_ < 0 || bytes.empty()) {
        return false;
    }
    // The descriptors go with the first byte; the rest follows as a plain reply.
    std::vector<char> control(CMSG_SPACE(sizeof(int) * descriptors.size()));
    char first = bytes.front();
    iovec data{&first, 1};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    if (!descriptors.empty()) {
        message.msg_control = control.data();
        message.msg_controllen = control.size();
        cmsghdr* header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * descriptors.size());
        std::memcpy(CMSG_DATA(header), descriptors.data(), sizeof(int) * descriptors.size());
    }
    ssize_t sent = 0;
    do {
        sent = ::sendmsg(channel_fd_, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    return sent == 1 && reply(bytes.substr(1));
}

std::string ChildProcess::take_output(bool& truncated) {
    truncated = output_dropped_ > 0;
    std::string taken = std::move(output_);
    output_.clear();
    output_dropped_ = 0;
    output_received_ = 0;
    return taken;
}

void ChildProcess::kill_group() {
    if (pid_ > 0) {
        ::kill(-pid_, SIGKILL);
    }
    if (sandbox_) {
        sandbox_->kill_remaining();
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
    output_received_ += static_cast<std::size_t>(n);
    if (output_kill_bytes_ > 0 && output_received_ > output_kill_bytes_ && !killed_for_output_ && !status_) {
        killed_for_output_ = true;
        kill_group();
    }
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

void ChildProcess::drain() {
    for (int reads = 0; reads < 256 && output_fd_ >= 0; ++reads) {
        pollfd fd{output_fd_, POLLIN, 0};
        if (::poll(&fd, 1, 0) <= 0 || fd.revents == 0) {
            return;
        }
        read_output();
    }
}

namespace {

double cpu_seconds(const rusage& usage) {
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

void ChildProcess::reap() {
    int wait_status = 0;
    if (!status_ && wait_for_child(WNOHANG, wait_status)) {
        status_ = conclude(wait_status);
    }
}

bool ChildProcess::wait_for_child(int options, int& wait_status) {
    rusage usage{};
    if (::wait4(pid_, &wait_status, options, &usage) != pid_) {
        return false;
    }
    cpu_seconds_used_ = cpu_seconds(usage);
    return true;
}

ExitStatus ChildProcess::conclude(int wait_status) const {
    ExitStatus status = decode(wait_status);
    if (sandbox_ && sandbox_->encodes_signals() && status.signal == 0 && status.code > 128 && status.code <= 128 + 64) {
        status.signal = status.code - 128;
        status.code = -1;
    }
    if (sandbox_ && sandbox_->memory_exceeded()) {
        status.limit = "memory";
        status.limit_amount = describe_bytes(memory_bytes_);
    } else if (killed_for_output_) {
        status.limit = "output";
        status.limit_amount = describe_bytes(output_kill_bytes_);
    } else if (status.signal == SIGXCPU && cpu_seconds_ > 0) {
        status.limit = "cpu";
        status.limit_amount = describe_cpu_seconds(cpu_seconds_);
    } else if (status.signal == SIGXFSZ && file_bytes_ > 0) {
        status.limit = "file size";
        status.limit_amount = describe_bytes(file_bytes_);
    }
    return status;
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
        wait_for_child(0, wait_status);
        status_ = conclude(wait_status);
        status_->timed_out = status_->limit.empty();
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
