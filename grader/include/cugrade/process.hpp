// Child processes with a wall-clock limit, killed as a whole process group, whose output is captured up to a cap.
// An optional result channel (a pipe on file descriptor 3) carries the harness's records, apart from anything the
// child prints.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cugrade {

using Clock = std::chrono::steady_clock;

struct ProcessOptions {
    std::vector<std::string> argv;
    std::filesystem::path working_directory;
    std::vector<std::pair<std::string, std::string>> environment;  // set on top of cugrade's own
    std::size_t output_limit = 256 * 1024;                         // bytes of stdout+stderr kept
    bool result_channel = false;
};

struct ExitStatus {
    int code = -1;        // the exit code, when the process exited
    int signal = 0;       // the signal that ended it, when one did
    bool timed_out = false;  // cugrade killed it at its deadline

    bool exited() const { return signal == 0 && !timed_out; }
    bool success() const { return exited() && code == 0; }
    std::string describe() const;  // after "the program": "exited with code 3", "was killed by signal 11 (SIGSEGV)"
};

class ChildProcess {
public:
    // Starts the process; throws std::runtime_error with a clear message when it cannot.
    explicit ChildProcess(const ProcessOptions& options);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    enum class Next { line, closed, deadline };
    // The next line of the result channel, waiting no later than `deadline`. Keeps draining the output meanwhile.
    Next next_line(std::string& line, Clock::time_point deadline);

    // Waits for the process to end, killing its group at `deadline`; leftovers of the group are killed too.
    ExitStatus finish(Clock::time_point deadline);

    // Ends the whole process group now.
    void kill_group();

    const std::string& output() const { return output_; }
    bool output_truncated() const { return output_dropped_ > 0; }

private:
    void poll_once(int timeout_ms);
    void read_output();
    void reap();

    pid_t pid_ = -1;
    int output_fd_ = -1;
    int channel_fd_ = -1;
    std::size_t output_limit_;
    std::string output_;
    std::size_t output_dropped_ = 0;
    std::string channel_buffer_;
    std::optional<ExitStatus> status_;
};

struct ProcessResult {
    ExitStatus status;
    std::string output;
    bool output_truncated = false;
};

// Makes SIGINT, SIGTERM and SIGHUP kill every running child process group before cugrade itself ends: a harness
// spinning on the GPU must not outlive an interrupted grading.
void kill_children_on_interrupt();

// Runs a command to completion (compilers and binutils): no result channel.
ProcessResult run_process(const ProcessOptions& options, std::chrono::duration<double> timeout);

}  // namespace cugrade
