#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/netlink.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "catch.hpp"
#include "sandbox/process.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/namespaces.hpp"
#include "seccomp_filter.hpp"

using namespace cugrade;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Mode = SandboxPolicy::Mode;

namespace {

// A grading's layout in miniature, outside /tmp (both sandboxes hide /tmp whatever the policy says): a working
// folder, a course folder to hide with a shared folder inside it that stays readable, and the probe program in a
// folder of its own.
struct Scene {
    fs::path root = fs::path(CUGRADE_SANDBOX_PROBE).parent_path() / ("sandbox-scene-" + std::to_string(::getpid()));
    fs::path work = root / "work";
    fs::path course = root / "course";
    fs::path secret = course / "reference.cu";
    fs::path shared = course / "shared";
    fs::path bin = root / "bin";
    fs::path probe = bin / "sandbox_probe";

    Scene() {
        fs::remove_all(root);
        for (const auto& folder : {work, shared, bin}) {
            fs::create_directories(folder);
        }
        std::ofstream(secret) << "the answer\n";
        std::ofstream(shared / "header.h") << "// shared\n";
        fs::copy_file(CUGRADE_SANDBOX_PROBE, probe);
    }
    ~Scene() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }

    SandboxPolicy policy(Mode mode) const {
        SandboxPolicy policy;
        policy.enabled = true;
        policy.mode = mode;
        policy.work_dir = work;
        policy.readable = {bin, shared};
        policy.hidden = {course};
        return policy;
    }

    ProcessResult run(const SandboxPolicy& policy, const std::vector<std::string>& args,
                      std::chrono::duration<double> timeout = 20s) const {
        ProcessOptions options;
        options.argv = {probe.string()};
        options.argv.insert(options.argv.end(), args.begin(), args.end());
        options.sandbox = policy;
        options.output_limit = 64 * 1024;
        return run_process(options, timeout);
    }
};

const Scene& scene() {
    static const Scene scene;
    return scene;
}

// Whether a mode can start a process on this machine; when it cannot, the test says why and asserts nothing.
bool usable(Mode mode) {
    static std::map<Mode, std::string> problems = [] {
        std::map<Mode, std::string> found;
        for (const Mode m : {Mode::bubblewrap, Mode::kernel}) {
            try {
                if (!scene().run(scene().policy(m), {"exec"}).status.success()) {
                    found[m] = "the probe did not run";
                }
            } catch (const std::exception& e) {
                found[m] = e.what();
            }
        }
        return found;
    }();
    if (const auto problem = problems.find(mode); problem != problems.end()) {
        WARN(sandbox_mode_name(mode) << " sandbox cannot run here, not tested: " << problem->second);
        return false;
    }
    return true;
}

// The processes now running (zombies aside) whose name is `name`.
int running(const std::string& name) {
    int count = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        std::ifstream stat(entry.path() / "stat");
        std::string text;
        std::getline(stat, text);
        const auto open = text.find(" (");
        const auto close = text.rfind(") ");
        if (open == std::string::npos || close == std::string::npos || close + 2 >= text.size()) {
            continue;
        }
        if (text.substr(open + 2, close - open - 2) == name && text[close + 2] != 'Z') {
            ++count;
        }
    }
    return count;
}

int running_after_a_while(const std::string& name) {
    const auto deadline = Clock::now() + 5s;
    int count = running(name);
    while (count > 0 && Clock::now() < deadline) {
        ::usleep(20000);
        count = running(name);
    }
    return count;
}

}  // namespace

TEST_CASE(
    "a sandboxed process sees the system's programs and libraries, the readable folders and its working folder only") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    if (mode == Mode::kernel && landlock_support().abi == 0) {
        WARN("no landlock here, files not tested: " << landlock_support().problem);
        return;
    }
    const Scene& s = scene();
    const SandboxPolicy policy = s.policy(mode);

    const ProcessResult hidden = s.run(policy, {"read", s.secret.string()});
    CHECK(hidden.status.code == 1);
    CHECK_THAT(hidden.output, contains_text("open: "));

    const ProcessResult shared = s.run(policy, {"read", (s.shared / "header.h").string()});
    CHECK(shared.status.success());
    CHECK(shared.output == "read 10 bytes\n");

    const ProcessResult system = s.run(policy, {"read", "/usr/include/stdio.h"});
    CHECK(system.status.success());
    // The rest of the host is absent or unreadable: /etc beyond what the loader reads, the home folder, /srv.
    for (const char* elsewhere : {"/etc/passwd", "/etc/hostname", "/root/.bashrc"}) {
        INFO(elsewhere);
        CHECK(s.run(policy, {"read", elsewhere}).status.code == 1);
    }

    const fs::path written = s.work / "out.txt";
    fs::remove(written);
    const ProcessResult work = s.run(policy, {"write", written.string()});
    CHECK(work.status.success());
    CHECK(fs::file_size(written) == 6);

    const ProcessResult outside = s.run(policy, {"write", (s.root / "outside.txt").string()});
    // Under bubblewrap /tmp is private: a write there (a build folder under /tmp) may succeed, into a folder that
    // vanishes with the sandbox. What matters is that nothing appears outside.
    const std::string root = fs::weakly_canonical(s.root).string();
    if (!(mode == Mode::bubblewrap && root.rfind("/tmp/", 0) == 0)) {
        CHECK(outside.status.code == 1);
    }
    CHECK_FALSE(fs::exists(s.root / "outside.txt"));
    CHECK(s.run(policy, {"write", "/etc/cugrade-test"}).status.code == 1);

    const ProcessResult readable = s.run(policy, {"write", (s.shared / "new.h").string()});
    CHECK(readable.status.code == 1);
    CHECK_FALSE(fs::exists(s.shared / "new.h"));
}

TEST_CASE("a sandboxed process runs in its working folder, which is also its TMPDIR and HOME") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    ProcessOptions options;
    options.argv = {"/bin/sh", "-c", "pwd; echo $TMPDIR; echo $HOME"};
    options.sandbox = scene().policy(mode);
    const ProcessResult result = run_process(options, 20s);
    CHECK(result.status.success());
    const std::string work = fs::weakly_canonical(scene().work).string();
    CHECK(result.output == work + "\n" + work + "\n" + work + "\n");
}

TEST_CASE("a sandboxed process sees no other process, and nothing of cugrade's environment") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    ::setenv("CUGRADE_TEST_SECRET", "the-instructors-token", 1);
    ProcessOptions options;
    options.argv = {"/bin/sh", "-c",
                    "cat /proc/[0-9]*/environ | tr '\\0' '\\n'; echo; ls /proc | grep -c '^[0-9]'; "
                    "cat /proc/" +
                        std::to_string(::getpid()) + "/cmdline || echo hidden"};
    options.sandbox = scene().policy(mode);
    const ProcessResult result = run_process(options, 20s);
    ::unsetenv("CUGRADE_TEST_SECRET");
    CHECK(result.status.success());
    CHECK(result.output.find("the-instructors-token") == std::string::npos);
    CHECK_THAT(result.output, contains_text("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"));
    if (mode == Mode::bubblewrap || pid_namespace_support().available) {
        CHECK_THAT(result.output, contains_text("hidden\n"));
        std::istringstream lines(result.output);
        std::string line, count;
        while (std::getline(lines, line)) {
            if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos) {
                count = line;
            }
        }
        CHECK(std::stoi(count) <= 5);  // the namespace's init, the shell and its children
    } else {
        WARN("no pid namespace here: " << pid_namespace_support().problem);
    }
}

TEST_CASE("each sandboxed GPU program has a /dev/shm of its own") {
    // compute-sanitizer names its shared memory by process id, and ids repeat from one pid namespace to the next.
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode) || (mode == Mode::kernel && !pid_namespace_support().available)) {
        return;
    }
    const std::string name = "cugrade-shm-probe-" + std::to_string(::getpid());
    ProcessOptions options;
    options.argv = {"/bin/sh", "-c", "echo x > /dev/shm/" + name + " && cat /dev/shm/" + name};
    options.sandbox = scene().policy(mode);
    options.sandbox.gpu = true;
    const ProcessResult result = run_process(options, 20s);
    CHECK(result.status.success());
    CHECK(result.output == "x\n");
    CHECK_FALSE(fs::exists("/dev/shm/" + name));
}

TEST_CASE("sandboxes side by side do not share abstract socket names") {
    // Tools name them by process id (compute-sanitizer), and ids repeat from one pid namespace to the next.
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode) || (mode == Mode::kernel && !pid_namespace_support().available)) {
        return;
    }
    ProcessOptions options;
    options.argv = {scene().probe.string(), "abstract", "cugrade-test-" + std::to_string(::getpid())};
    options.sandbox = scene().policy(mode);
    ChildProcess first(options);
    ChildProcess second(options);
    const auto deadline = Clock::now() + 20s;
    CHECK(first.finish(deadline).success());
    CHECK(second.finish(deadline).success());
    CHECK(first.output() == "bound\n");
    CHECK(second.output() == "bound\n");
}

TEST_CASE("a sandboxed process has no network") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    const ProcessResult result = scene().run(scene().policy(mode), {"connect"});
    CHECK(result.status.code == 1);
    if (mode == Mode::bubblewrap) {
        CHECK(result.output == "connect: Network is unreachable\n");  // a network namespace with no route
    } else {
        CHECK(result.output == "socket: Permission denied\n");  // seccomp
    }
}

TEST_CASE("a sandboxed fork loop is contained, and none of its processes outlives it") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    SandboxPolicy policy = scene().policy(mode);
    policy.extra_processes = 32;
    const long attempts = 500;
    const ProcessResult result = scene().run(policy, {"fork", std::to_string(attempts)});
    CHECK(result.status.success());
    long forked = -1;
    std::sscanf(result.output.c_str(), "forked %ld", &forked);
    CHECK(forked >= 0);
    if (::geteuid() == 0) {
        WARN("running as root: the process limit is not enforced, only the group kill is tested");
    } else {
        CHECK(forked < attempts);
    }
    CHECK(running_after_a_while("sandbox_probe") == 0);
}

TEST_CASE("a sandboxed process cannot leave its process group without a pid namespace around it") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    const ProcessResult result = scene().run(scene().policy(mode), {"setsid"});
    if (mode == Mode::bubblewrap) {
        CHECK(result.status.success());  // harmless there: the whole pid namespace dies with bwrap
    } else {
        CHECK(result.output == "setsid: Operation not permitted\n");
    }
}

TEST_CASE("a sandboxed process that prints too much is stopped") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    SandboxPolicy policy = scene().policy(mode);
    policy.output_kill_bytes = 1 << 20;
    const ProcessResult result = scene().run(policy, {"print", std::to_string(std::uint64_t{1} << 30)});
    CHECK(result.status.limit == "output");
    CHECK_FALSE(result.status.timed_out);
    CHECK(result.status.describe() == "printed more than 1 MiB and was stopped");
    CHECK(result.output.size() == 64 * 1024);
    CHECK(result.output_truncated);
}

TEST_CASE("a sandboxed process past its cpu time is stopped") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    SandboxPolicy policy = scene().policy(mode);
    policy.cpu_seconds = 1;
    const auto start = Clock::now();
    const ProcessResult result = scene().run(policy, {"spin"}, 30s);
    CHECK(result.status.limit == "cpu");
    CHECK(result.status.signal == SIGXCPU);
    CHECK(result.status.describe() == "used more than 1 s of CPU time and was stopped");
    CHECK(Clock::now() - start < 15s);
}

TEST_CASE("a sandboxed process that writes too large a file is stopped") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    SandboxPolicy policy = scene().policy(mode);
    policy.file_bytes = 1 << 20;
    const ProcessResult result =
        scene().run(policy, {"bigfile", (scene().work / "big").string(), std::to_string(8 << 20)});
    CHECK(result.status.limit == "file size");
    CHECK(result.status.describe() == "wrote a file larger than 1 MiB and was stopped");
    CHECK(fs::file_size(scene().work / "big") <= (1 << 20));
}

TEST_CASE("a sandboxed process may start programs, crash and use the result channel as any other") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    CHECK(scene().run(scene().policy(mode), {"exec"}).status.success());

    ProcessOptions crash;
    crash.argv = {"/bin/sh", "-c", "kill -SEGV $$"};
    crash.sandbox = scene().policy(mode);
    const ProcessResult crashed = run_process(crash, 20s);
    CHECK(crashed.status.signal == SIGSEGV);
    CHECK(crashed.status.limit.empty());
    CHECK(crashed.status.describe() == "was killed by signal 11 (SIGSEGV)");

    ProcessOptions exits;
    exits.argv = {"/bin/sh", "-c", "exit 3"};
    exits.sandbox = scene().policy(mode);
    CHECK(run_process(exits, 20s).status.describe() == "exited with code 3");

    ProcessOptions options;
    options.argv = {"/bin/sh", "-c", "echo printed; echo '{\"event\":\"ready\"}' >&$CUGRADE_RESULT_FD"};
    options.result_channel = true;
    options.sandbox = scene().policy(mode);
    ChildProcess child(options);
    std::string line;
    REQUIRE(child.next_line(line, Clock::now() + 20s) == ChildProcess::Next::line);
    CHECK(line == "{\"event\":\"ready\"}");
    CHECK(child.finish(Clock::now() + 20s).success());
    CHECK(child.output() == "printed\n");
}

TEST_CASE("a sandbox that cannot be set up is an error, not a process run without it") {
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    SandboxPolicy policy = scene().policy(mode);
    policy.work_dir = scene().root / "no-such-folder";
    ProcessOptions options;
    options.argv = {scene().probe.string(), "exec"};
    options.sandbox = policy;
    try {
        run_process(options, 5s);
        FAIL("no error");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "cannot sandbox '" + scene().probe.string() + "': working folder " +
                                           policy.work_dir.string() + " does not exist");
    }

    // A missing command reads as it does without a sandbox ("No such file or directory", or "Permission denied"
    // when a folder on PATH cannot be searched).
    std::string unsandboxed;
    options.argv = {"cugrade-no-such-command"};
    options.sandbox = SandboxPolicy{};
    try {
        run_process(options, 5s);
    } catch (const std::runtime_error& e) {
        unsandboxed = e.what();
    }
    CHECK_THAT(unsandboxed, contains_text("cannot run 'cugrade-no-such-command': "));
    options.sandbox = scene().policy(mode);
    try {
        run_process(options, 5s);
        FAIL("no error");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == unsandboxed);
    }
}

TEST_CASE("the sandbox's protections are described in fixed words") {
    const Scene& s = scene();
    const bool root = ::geteuid() == 0;
    fs::create_directories(s.bin / "private");
    SandboxPolicy policy = s.policy(Mode::kernel);
    policy.hidden = {s.course, s.bin / "private", s.root / "not-there"};
    policy.cpu_seconds = 119.5;
    policy.extra_processes = 512;
    policy.file_bytes = std::uint64_t{64} << 20;
    policy.output_kill_bytes = std::size_t{16} << 20;
    const std::string limits = "limits: cpu 120 s, processes +512, file size 64 MiB, output 16 MiB";

    const std::string shown =
        "the system's folders, " + s.bin.string() + ", " + s.shared.string() + ", the working folder";
    std::vector<std::string> kernel;
    if (const int abi = landlock_support().abi; abi > 0) {
        kernel.push_back("landlock (abi " + std::to_string(abi) + "): nothing of the host readable but " + shown);
        kernel.push_back("landlock cannot hide " + (s.bin / "private").string() + ": it lies under " + s.bin.string());
        kernel.emplace_back(abi >= 6 ? "landlock: no signals to processes outside the sandbox"
                                     : "signals not contained: needs landlock abi 6");
    } else {
        kernel.push_back("files not protected: " + landlock_support().problem);
    }
    kernel.emplace_back(pid_namespace_support().available ? "no network (network namespace, and seccomp)"
                                                          : "seccomp: no network");
    kernel.emplace_back(pid_namespace_support().available
                            ? "other processes invisible (pid namespace)"
                            : "other processes visible: " + pid_namespace_support().problem);
    std::vector<std::string> bubblewrap = {
        "bubblewrap: nothing of the host visible but " + shown + "; private /tmp and /dev",
        "bubblewrap: " + (s.bin / "private").string() + " hidden", "no network (network namespace)",
        "other processes invisible (pid namespace)"};
    for (auto* lines : {&kernel, &bubblewrap}) {
        if (root) {
            lines->emplace_back("capabilities dropped (running as root)");
        }
        lines->emplace_back("environment: PATH, HOME, TMPDIR, LANG and the CUDA variables only");
        lines->push_back(limits);
        if (root && cgroup_support().pids_base.empty()) {
            lines->emplace_back("process limit not enforced: running as root");
        }
    }

    CHECK(describe_protections(policy) == kernel);
    policy.mode = Mode::bubblewrap;
    if (bubblewrap_support().path.empty()) {
        CHECK(describe_protections(policy) ==
              std::vector<std::string>{"bubblewrap unavailable: " + bubblewrap_support().problem});
    } else {
        CHECK(describe_protections(policy) == bubblewrap);
    }
    policy.mode = Mode::automatic;
    if (bubblewrap_support().path.empty()) {
        kernel.insert(kernel.begin(), "bubblewrap not used: " + bubblewrap_support().problem);
        CHECK(describe_protections(policy) == kernel);
    } else {
        CHECK(describe_protections(policy) == bubblewrap);
    }

    SandboxPolicy open = s.policy(Mode::kernel);
    open.network = true;
    open.hidden.clear();
    const auto lines = describe_protections(open);
    CHECK(std::find(lines.begin(), lines.end(), "network allowed") != lines.end());
    CHECK(describe_protections(SandboxPolicy{}) == std::vector<std::string>{"no sandbox"});

    CHECK(describe_bytes(16 << 20) == "16 MiB");
    CHECK(describe_bytes(std::uint64_t{1} << 30) == "1 GiB");
    CHECK(describe_bytes(512 << 10) == "512 KiB");
    CHECK(describe_bytes(1000) == "1000 bytes");
    CHECK(describe_cpu_seconds(30) == "30 s");
    CHECK(sandbox_mode_name(Mode::kernel) == "kernel");
}

namespace {

// Runs `test` in a forked child (a seccomp filter cannot be taken off again) and returns its exit code: 0 when
// every step held, else the number of the step that did not.
template <class Test>
int in_child(Test test) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::_exit(test());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

bool refused_with(long result, int error) { return result == -1 && errno == error; }

}  // namespace

TEST_CASE("seccomp: no new processes, but threads") {
    const int failed_step = in_child([] {
        seccomp::Rules rules;
        rules.deny_new_processes = true;
        if (seccomp::install(rules) != nullptr) {
            return 1;
        }
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::_exit(0);
        }
        if (!refused_with(pid, EPERM)) {
            return 2;
        }
        std::atomic<bool> ran{false};
        try {
            std::thread thread([&] { ran = true; });
            thread.join();
        } catch (...) {
            return 3;
        }
        if (!ran) {
            return 4;
        }
        ::execl("/bin/true", "true", static_cast<char*>(nullptr));
        if (errno != EPERM) {
            return 5;
        }
        if (!refused_with(::syscall(__NR_clone3, nullptr, 0), ENOSYS)) {
            return 6;
        }
        if (!refused_with(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr), EPERM)) {
            return 7;
        }
        if (::system("true") == 0) {  // posix_spawn: clone3, then clone without CLONE_THREAD
            return 8;
        }
        return 0;
    });
    CHECK(failed_step == 0);
}

TEST_CASE("seccomp: no network, on every thread, but local sockets") {
    const int failed_step = in_child([] {
        // A thread that was there before the filter must get it too (the harness installs it after CUDA's).
        std::atomic<int> stage{0};
        std::atomic<int> thread_result{-1};
        std::thread earlier([&] {
            while (stage.load() == 0) {
                ::usleep(1000);
            }
            const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
            thread_result = fd < 0 && errno == EACCES ? 0 : 1;
        });
        seccomp::Rules rules;
        rules.deny_network = true;
        const char* error = seccomp::install(rules);
        stage = 1;
        earlier.join();
        if (error != nullptr) {
            return 1;
        }
        if (thread_result != 0) {
            return 2;
        }
        if (!refused_with(::socket(AF_INET, SOCK_STREAM, 0), EACCES)) {
            return 3;
        }
        if (!refused_with(::socket(AF_INET6, SOCK_DGRAM, 0), EACCES)) {
            return 4;
        }
        if (::socket(AF_UNIX, SOCK_STREAM, 0) < 0) {
            return 5;
        }
        if (::socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE) < 0) {
            return 6;
        }
        int pair[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
            return 7;
        }
        if (!refused_with(::syscall(__NR_io_uring_setup, 8, nullptr), EPERM)) {
            return 8;
        }
        const pid_t pid = ::fork();  // processes are another rule's business
        if (pid == 0) {
            ::_exit(0);
        }
        if (pid < 0) {
            return 9;
        }
        ::waitpid(pid, nullptr, 0);
        return 0;
    });
    CHECK(failed_step == 0);
}

TEST_CASE("seccomp: a process kept in its group") {
    const int failed_step = in_child([] {
        seccomp::Rules rules;
        rules.keep_process_group = true;
        if (seccomp::install(rules) != nullptr) {
            return 1;
        }
        if (!refused_with(::setsid(), EPERM)) {
            return 2;
        }
        if (!refused_with(::setpgid(0, 0), EPERM)) {
            return 3;
        }
        return 0;
    });
    CHECK(failed_step == 0);
}

TEST_CASE("containment is full with bubblewrap or with Landlock and a pid namespace, and says what is missing") {
    CHECK(containment(SandboxPolicy{}).level == Containment::none);
    for (const Mode mode : {Mode::bubblewrap, Mode::kernel}) {
        SandboxPolicy policy = scene().policy(mode);
        const ContainmentCheck check = containment(policy);
        if (mode == Mode::bubblewrap && !bubblewrap_support().path.empty()) {
            CHECK(check.level == Containment::full);
        } else if (landlock_support().abi == 0) {
            CHECK(check.level == Containment::none);
            REQUIRE(check.missing.size() == 1);
            CHECK_THAT(check.missing[0], contains_text("the host's files are not protected"));
        } else if (!pid_namespace_support().available) {
            CHECK(check.level == Containment::files);
            CHECK_THAT(check.missing[0], contains_text("other processes are visible"));
        } else {
            CHECK(check.level == Containment::full);
        }
    }
    CHECK(containment_from_string("files") == Containment::files);
    CHECK_FALSE(containment_from_string("most"));
}

TEST_CASE("sandboxes started from many threads at once, while others allocate, all start and end") {
    // A batch builds on every core: each start must be safe while other threads hold the C library's locks (the
    // kernel mode starts its program with raw clones, which run none of its fork handlers).
    const Mode mode = GENERATE(Mode::bubblewrap, Mode::kernel);
    INFO("mode: " << sandbox_mode_name(mode));
    if (!usable(mode)) {
        return;
    }
    const Scene& s = scene();
    const SandboxPolicy policy = s.policy(mode);
    std::atomic<bool> stop{false};
    std::atomic<int> started{0}, succeeded{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {  // allocating all the time, as the other builds' output readers do
            while (!stop) {
                std::vector<std::string> churn(64, std::string(4096, 'x'));
            }
        });
    }
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 6; ++i) {
                ++started;
                succeeded += s.run(policy, {"print", "1"}, 30s).status.success();
            }
        });
    }
    for (std::size_t t = 4; t < threads.size(); ++t) {
        threads[t].join();
    }
    stop = true;
    for (std::size_t t = 0; t < 4; ++t) {
        threads[t].join();
    }
    CHECK(started == 48);
    CHECK(succeeded == 48);
}
