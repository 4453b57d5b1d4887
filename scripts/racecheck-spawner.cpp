// For scripts/racecheck-reports.sh: runs PROGRAM ARGS... COUNT times, PARALLEL at once, and prints each child's wall
// time and the whole's (so that one compute-sanitizer front-end, started on this, sees every child).
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
using Clock = std::chrono::steady_clock;
int main(int argc, char** argv) {
    int count = std::atoi(argv[1]), parallel = std::atoi(argv[2]);
    char** child_argv = argv + 3;
    std::map<pid_t, Clock::time_point> running;
    auto start = Clock::now();
    int started = 0, done = 0;
    while (done < count) {
        while (started < count && (int)running.size() < parallel) {
            pid_t pid = fork();
            if (pid == 0) {
                execv(child_argv[0], child_argv);
                _exit(127);
            }
            running[pid] = Clock::now();
            ++started;
        }
        int status;
        pid_t pid = wait(&status);
        auto t = std::chrono::duration<double>(Clock::now() - running[pid]).count();
        running.erase(pid);
        ++done;
        std::fprintf(stderr, "SPAWNER child %d ended %d in %.3f s\n", done,
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1, t);
    }
    std::fprintf(stderr, "SPAWNER all %d in %.3f s\n", count,
                 std::chrono::duration<double>(Clock::now() - start).count());
}
