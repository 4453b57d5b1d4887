// Child processes with a wall-clock limit, killed as a whole process group, whose output is captured up to a cap.
// An optional result channel (a socket on file descriptor 3) carries the harness's records, apart from anything the
// child prints, and the grader's few answers back. An optional sandbox (sandbox.hpp) contains what the child may read,
// reach and use.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sandbox/sandbox.hpp"

namespace cugrade {

using Clock = std::chrono::steady_clock;

struct ProcessOptions {
    std::vector<std::string> argv;
    std::filesystem::path working_directory;
    // Set on top of cugrade's own environment; a sandboxed process gets these on top of sandbox_environment() and
    // nothing else of cugrade's.
    std::vector<std::pair<std::string, std::string>> environment;
    std::size_t output_limit = 256 * 1024;  // bytes of stdout+stderr kept
    bool result_channel = false;
    // A descriptor of cugrade's the process gets as descriptor 4, named in the environment variable peer_fd_env
    // (the channel between a checker and its runner); -1 for none. cugrade keeps its own copy.
    int peer_fd = -1;
    std::string peer_fd_env;
    // When enabled, the process starts in it (its work_dir is then the working directory); a sandbox that cannot
    // be set up is an error, never a process run without it.
    SandboxPolicy sandbox;
};

struct ExitStatus {
    int code = -1;           // the exit code, when the process exited
    int signal = 0;          // the signal that ended it, when one did
    bool timed_out = false;  // cugrade killed it at its deadline
    // The sandbox's limit that ended it: "output" (cugrade killed the group for printing more than
    // output_kill_bytes), "cpu" (SIGXCPU at RLIMIT_CPU), "file size" (SIGXFSZ at RLIMIT_FSIZE), "memory" (the
    // kernel killed it at its control group's memory limit); empty otherwise.
    // A program that catches SIGXCPU is killed by SIGKILL at the hard limit a few seconds later: that reads as
    // signal 9, not "cpu".
    std::string limit;
    std::string limit_amount;  // the limit as describe() shows it: "16 MiB", "30 s"

    bool exited() const { return signal == 0 && !timed_out; }
    bool success() const { return exited() && code == 0; }
    // After "the program": "exited with code 3", "was killed by signal 11 (SIGSEGV)", "timed out", "printed more
    // than 16 MiB and was stopped", "used more than 30 s of CPU time and was stopped", "wrote a file larger than
    // 64 MiB and was stopped", "used more than 8 GiB of memory and was stopped".
    std::string describe() const;
};

// Under bubblewrap the process cugrade waits for is bwrap, and in a pid namespace of the kernel mode the namespace's
// init; both report a program killed by signal N as exit code 128+N. ChildProcess turns such a code back into the
// signal, so a sandboxed program that itself exits with 128+N (N from 1 to 64) reads as killed by signal N.
class ChildProcess {
public:
    // Starts the process; throws std::runtime_error with a clear message when it cannot ("cannot run 'nvcc': ...",
    // "cannot sandbox 'nvcc': landlock_restrict_self failed: Operation not permitted").
    explicit ChildProcess(const ProcessOptions& options);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    enum class Next { line, closed, deadline };
    // The next line of the result channel, waiting no later than `deadline`. Keeps draining the output meanwhile.
    Next next_line(std::string& line, Clock::time_point deadline);

    // Waits for the process to end, killing its group at `deadline`; leftovers of the group are killed too.
    ExitStatus finish(Clock::time_point deadline);

    // Reads what the process has printed so far without waiting, so that a full pipe never stops it while cugrade
    // waits on another process.
    void drain();

    // Ends the whole process group now.
    void kill_group();

    // Answers on the result channel, which is a socket: the harness reads what the grader writes (protocol.hpp).
    // False when the process no longer listens.
    bool reply(std::string_view bytes);

    // The same, with descriptors passed along with it (SCM_RIGHTS): the process gets copies of its own.
    bool reply_with_descriptors(std::string_view bytes, const std::vector<int>& descriptors);

    const std::string& output() const { return output_; }
    // What it printed since the last take, and whether some was dropped past the output limit; the limits on its
    // output start afresh (a process that serves several jobs: each job's output is its own).
    std::string take_output(bool& truncated);
    bool output_truncated() const { return output_dropped_ > 0; }

    // CPU time (user and system) the process and the children it waited for used, once it has ended.
    double cpu_seconds_used() const { return cpu_seconds_used_; }

private:
    // Waits on the child's error pipe until it has exec'd; where it did not (or is not tracked), ends it, closes what
    // the start opened and throws why.
    void await_exec(int exec_error, const std::string& program, bool tracked);
    void poll_once(int timeout_ms);
    void read_output();
    void reap();
    bool wait_for_child(int options, int& wait_status);  // wait4: true once reaped, its CPU time kept
    ExitStatus conclude(int wait_status) const;

    pid_t pid_ = -1;
    int output_fd_ = -1;
    int channel_fd_ = -1;
    std::size_t output_limit_;
    std::string output_;
    std::size_t output_dropped_ = 0;
    std::size_t output_received_ = 0;
    std::size_t output_kill_bytes_ = 0;
    bool killed_for_output_ = false;
    std::unique_ptr<SandboxLaunch> sandbox_;
    double cpu_seconds_ = 0;
    std::uint64_t file_bytes_ = 0;
    std::uint64_t memory_bytes_ = 0;
    std::string channel_buffer_;
    std::optional<ExitStatus> status_;
    double cpu_seconds_used_ = 0;
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
