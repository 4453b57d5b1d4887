#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "catch.hpp"
#include "sandbox/process.hpp"

using namespace cugrade;
using namespace std::chrono_literals;

namespace {

ProcessResult shell(const std::string& script, std::chrono::duration<double> timeout = 10s,
                    std::size_t output_limit = 1 << 20) {
    ProcessOptions options;
    options.argv = {"/bin/sh", "-c", script};
    options.output_limit = output_limit;
    return run_process(options, timeout);
}

}  // namespace

TEST_CASE("a process's exit code and output are captured") {
    const ProcessResult result = shell("echo out; echo err >&2; exit 3");
    CHECK(result.status.exited());
    CHECK(result.status.code == 3);
    CHECK(result.output == "out\nerr\n");
    CHECK(result.status.describe() == "exited with code 3");
}

TEST_CASE("a process past its deadline is killed with its whole group") {
    const auto start = Clock::now();
    const ProcessResult result = shell("sleep 30 & sleep 30", 0.3s);
    CHECK(result.status.timed_out);
    CHECK(result.status.describe() == "timed out");
    CHECK(Clock::now() - start < 5s);
}

TEST_CASE("a process killed by a signal says which") {
    const ProcessResult result = shell("kill -SEGV $$");
    CHECK(result.status.signal == 11);
    CHECK(result.status.describe() == "was killed by signal 11 (SIGSEGV)");
}

TEST_CASE("output past the cap is dropped, and the process still finishes") {
    const ProcessResult result = shell("head -c 1000000 /dev/zero", 10s, 1000);
    CHECK(result.status.success());
    CHECK(result.output.size() == 1000);
    CHECK(result.output_truncated);
}

TEST_CASE("a command that does not exist is reported by name") {
    ProcessOptions options;
    options.argv = {"cugrade-no-such-command"};
    try {
        run_process(options, 1s);
        FAIL("no error");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "cannot run 'cugrade-no-such-command': No such file or directory");
    }
}

TEST_CASE("the result channel is apart from the output") {
    ProcessOptions options;
    options.argv = {"/bin/sh", "-c", "echo printed; echo '{\"event\":\"ready\"}' >&$CUGRADE_RESULT_FD"};
    options.result_channel = true;
    ChildProcess child(options);
    std::string line;
    REQUIRE(child.next_line(line, Clock::now() + 5s) == ChildProcess::Next::line);
    CHECK(line == "{\"event\":\"ready\"}");
    CHECK(child.next_line(line, Clock::now() + 5s) == ChildProcess::Next::closed);
    CHECK(child.finish(Clock::now() + 5s).success());
    CHECK(child.output() == "printed\n");
}

TEST_CASE("the grader answers on the result channel") {
    ProcessOptions options;
    options.argv = {"/bin/sh", "-c",
                    "echo '{\"event\":\"gpu\"}' >&$CUGRADE_RESULT_FD; "
                    "answer=$(head -c 1 <&$CUGRADE_RESULT_FD); echo \"got $answer\" >&$CUGRADE_RESULT_FD"};
    options.result_channel = true;
    ChildProcess child(options);
    std::string line;
    REQUIRE(child.next_line(line, Clock::now() + 5s) == ChildProcess::Next::line);
    CHECK(line == "{\"event\":\"gpu\"}");
    CHECK(child.reply("g"));
    REQUIRE(child.next_line(line, Clock::now() + 5s) == ChildProcess::Next::line);
    CHECK(line == "got g");
    CHECK(child.next_line(line, Clock::now() + 5s) == ChildProcess::Next::closed);
    CHECK(child.finish(Clock::now() + 5s).success());
    CHECK_FALSE(child.reply("g"));
}

TEST_CASE("a program with a peer and no result channel finds nothing open at the channel's number") {
    // What cugrade's own parent left open at descriptor 3, without close-on-exec, as a test runner or a shell may.
    int left_open[2];
    REQUIRE(::pipe(left_open) == 0);
    const int saved = ::dup(3);
    REQUIRE(::dup2(left_open[1], 3) == 3);
    int peer[2];
    REQUIRE(::pipe(peer) == 0);
    ProcessOptions options;
    options.argv = {"/bin/sh", "-c",
                    "if (: >&3) 2>/dev/null; then echo 3 open; else echo 3 closed; fi; "
                    "if (: >&$CUGRADE_RUNNER_FD) 2>/dev/null; then echo peer open; fi"};
    options.peer_fd = peer[1];
    options.peer_fd_env = "CUGRADE_RUNNER_FD";
    const ProcessResult result = run_process(options, 10s);
    if (saved >= 0) {
        ::dup2(saved, 3);
        ::close(saved);
    } else {
        ::close(3);
    }
    for (const int fd : {left_open[0], left_open[1], peer[0], peer[1]}) {
        ::close(fd);
    }
    CHECK(result.output == "3 closed\npeer open\n");
}

namespace {

// True once `pid` is gone or a zombie: it runs no more.
bool ended(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    std::getline(stat, text);
    const auto state = text.find(") ");
    return text.empty() || (state != std::string::npos && text[state + 2] == 'Z');
}

}  // namespace

TEST_CASE("an interrupted cugrade takes its running children with it") {
    const std::string pid_file = "/tmp/cugrade-test-interrupt.pid";
    std::remove(pid_file.c_str());
    const pid_t grader = ::fork();
    if (grader == 0) {
        kill_children_on_interrupt();
        ProcessOptions options;
        // The sleeper is a grandchild: only killing the whole group reaches it.
        options.argv = {
            "/bin/sh", "-c",
            "sleep 60 & echo $! > " + pid_file + ".partial && mv " + pid_file + ".partial " + pid_file + " && wait"};
        ChildProcess child(options);
        while (!std::ifstream(pid_file)) {
            ::usleep(10000);
        }
        ::raise(SIGTERM);
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(grader, &status, 0);
    CHECK(WIFSIGNALED(status));
    pid_t sleeper = 0;
    std::ifstream(pid_file) >> sleeper;
    REQUIRE(sleeper > 0);
    const auto deadline = Clock::now() + 5s;
    while (!ended(sleeper) && Clock::now() < deadline) {
        ::usleep(10000);
    }
    CHECK(ended(sleeper));
}
