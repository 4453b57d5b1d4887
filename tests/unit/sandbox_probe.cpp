// A program that tries one thing the sandbox may forbid, says what happened, and exits 0 when it succeeded, 1 when
// it was refused. test_sandbox.cpp runs it inside each sandbox mode.
//   read FILE          read a file                 write FILE          create and write a file
//   bigfile FILE N     write N bytes to a file     connect             TCP to 1.1.1.1:53
//   fork N             fork up to N children that sleep, then print how many forks succeeded
//   print N            print N bytes               spin                burn CPU (at most a minute of wall time)
//   exec               exec /bin/true              setsid              leave the process group
//   abstract NAME      bind an abstract Unix socket named NAME and hold it for a second
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int refused(const char* what) {
    std::printf("%s: %s\n", what, std::strerror(errno));
    return 1;
}

int read_file(const char* path) {
    const int fd = ::open(path, O_RDONLY);
    if (fd < 0) {
        return refused("open");
    }
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
        return refused("read");
    }
    std::printf("read %zd bytes\n", n);
    return 0;
}

int write_file(const char* path, unsigned long long bytes) {
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        return refused("open");
    }
    const std::vector<char> block(65536, 'x');
    unsigned long long written = 0;
    while (written < bytes) {
        const ssize_t n = ::write(fd, block.data(), std::min<unsigned long long>(block.size(), bytes - written));
        if (n < 0) {
            return refused("write");
        }
        written += static_cast<unsigned long long>(n);
    }
    ::close(fd);
    std::printf("wrote %llu bytes\n", written);
    return 0;
}

int connect_out() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return refused("socket");
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(53);
    ::inet_pton(AF_INET, "1.1.1.1", &address.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        if (errno != EINPROGRESS) {
            return refused("connect");
        }
        pollfd waiting{fd, POLLOUT, 0};
        if (::poll(&waiting, 1, 3000) != 1) {
            errno = ETIMEDOUT;
            return refused("connect");
        }
        int error = 0;
        socklen_t length = sizeof error;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
        if (error != 0) {
            errno = error;
            return refused("connect");
        }
    }
    std::printf("connected\n");
    return 0;
}

int fork_loop(long attempts) {
    long forked = 0;
    for (long i = 0; i < attempts; ++i) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::sleep(60);  // long enough to be found if the sandbox let it outlive its parent
            ::_exit(0);
        }
        forked += pid > 0 ? 1 : 0;
    }
    std::printf("forked %ld of %ld\n", forked, attempts);
    std::fflush(stdout);
    return 0;
}

int print(unsigned long long bytes) {
    const std::vector<char> block(65536, 'x');
    unsigned long long written = 0;
    while (written < bytes) {
        const ssize_t n = ::write(1, block.data(), std::min<unsigned long long>(block.size(), bytes - written));
        if (n < 0) {
            return refused("write");
        }
        written += static_cast<unsigned long long>(n);
    }
    return 0;
}

int spin() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    volatile unsigned long long counter = 0;
    while (std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 1000000; ++i) {
            counter = counter + 1;
        }
    }
    std::printf("spun for a minute\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string what = argc > 1 ? argv[1] : "";
    if (what == "read" && argc == 3) {
        return read_file(argv[2]);
    }
    if (what == "write" && argc == 3) {
        return write_file(argv[2], 6);
    }
    if (what == "bigfile" && argc == 4) {
        return write_file(argv[2], std::strtoull(argv[3], nullptr, 10));
    }
    if (what == "connect") {
        return connect_out();
    }
    if (what == "fork" && argc == 3) {
        return fork_loop(std::strtol(argv[2], nullptr, 10));
    }
    if (what == "print" && argc == 3) {
        return print(std::strtoull(argv[2], nullptr, 10));
    }
    if (what == "spin") {
        return spin();
    }
    if (what == "exec") {
        ::execl("/bin/true", "true", static_cast<char*>(nullptr));
        return refused("exec");
    }
    if (what == "abstract" && argc == 3) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path + 1, argv[2], sizeof address.sun_path - 2);  // a leading NUL: abstract
        const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + std::strlen(argv[2]));
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
            return refused("bind");
        }
        ::sleep(1);
        std::printf("bound\n");
        return 0;
    }
    if (what == "setsid") {
        if (::setsid() < 0) {
            return refused("setsid");
        }
        std::printf("left the group\n");
        return 0;
    }
    std::fprintf(stderr, "usage: sandbox_probe read FILE | write FILE | bigfile FILE N | connect | fork N | print N | "
                         "spin | exec | setsid | abstract NAME\n");
    return 2;
}
