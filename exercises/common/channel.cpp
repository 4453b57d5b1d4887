#include "channel.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

namespace cugrade::harness {
namespace {

// A job brings the submission's device code and its runner's channel (protocol.hpp); more are closed.
constexpr std::size_t max_descriptors = 4;

}  // namespace

Channel::Channel() {
    const char* fd_text = std::getenv(protocol::result_fd_env);
    fd_ = fd_text != nullptr ? std::atoi(fd_text) : -1;
    // Without the grader (a person running the harness by hand) results go to stderr.
    out_ = fd_ > 2 ? fdopen(fd_, "w") : stderr;
    if (out_ == nullptr) {
        out_ = stderr;
    }
    unsetenv(protocol::result_fd_env);
    // The run's token marks records as the harness's. Wiped from the environment block itself, which
    // /proc/self/environ would still show after unsetenv.
    if (char* token = std::getenv(protocol::token_env); token != nullptr) {
        token_ = token;
        std::memset(token, 0, std::strlen(token));
    }
    unsetenv(protocol::token_env);
}

void Channel::send(nlohmann::json record) {
    record["token"] = token_;
    const std::string line = record.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + "\n";
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
}

void Channel::share_gpu() {
    if (shared_depth_++ == 0 && held_ == Held::none) {
        ask_for_gpu("shared", Held::shared);
    }
}

void Channel::unshare_gpu() {
    if (--shared_depth_ == 0 && held_ == Held::shared) {
        ask_for_gpu("none", Held::none);
    }
}

void Channel::gpu_alone() {
    if (alone_depth_++ == 0) {
        ask_for_gpu("exclusive", Held::exclusive);
    }
}

void Channel::gpu_done() {
    if (--alone_depth_ > 0) {
        return;
    }
    if (shared_depth_ > 0) {
        ask_for_gpu("shared", Held::shared);
    } else {
        ask_for_gpu("none", Held::none);
    }
}

char Channel::take_counters() {
    if (fd_ <= 2) {
        return protocol::counters_granted;
    }
    if (shared_depth_ == 0 && held_ != Held::none) {
        ask_for_gpu("none", Held::none);
    }
    send({{"event", "counters"}, {"use", "take"}});
    return answer();
}

char Channel::try_counters() {
    if (fd_ <= 2) {
        return protocol::counters_granted;
    }
    send({{"event", "counters"}, {"use", "try"}});
    return answer();
}

void Channel::give_counters() {
    if (fd_ > 2) {
        send({{"event", "counters"}, {"use", "give"}});
    }
}

void Channel::begin_hidden_cases() {
    std::fflush(nullptr);
    send({{"event", "hidden_cases"}});
    if (fd_ > 2) {
        wait_for(protocol::output_drained);
    }
}

void Channel::ask_for_gpu(const char* use, Held held) {
    if (!gpu_gate_ || held == held_) {
        return;
    }
    send({{"event", "gpu"}, {"use", use}});
    held_ = held;
    if (held == Held::none) {
        return;
    }
    wait_for(protocol::gpu_granted);
}

char Channel::answer(std::vector<int>* descriptors) {
    char byte = 0;
    ssize_t got = 0;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_descriptors)];
    do {
        iovec data{&byte, 1};
        msghdr message{};
        message.msg_iov = &data;
        message.msg_iovlen = 1;
        message.msg_control = descriptors != nullptr ? control : nullptr;
        message.msg_controllen = descriptors != nullptr ? sizeof control : 0;
        got = ::recvmsg(fd_, &message, MSG_CMSG_CLOEXEC);
        for (cmsghdr* c = descriptors != nullptr && got == 1 ? CMSG_FIRSTHDR(&message) : nullptr; c != nullptr;
             c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (std::size_t k = 0; k < count; ++k) {
                    int received = -1;
                    std::memcpy(&received, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
                    descriptors->push_back(received);
                }
            }
        }
    } while (got < 0 && errno == EINTR);
    if (got != 1) {
        std::_Exit(protocol::exit_fatal);
    }
    return byte;
}

std::string Channel::receive_line(std::size_t limit, std::vector<int>* descriptors) {
    std::string line;
    for (char byte = answer(descriptors); byte != '\n'; byte = answer(descriptors)) {
        if (line.size() == limit) {
            std::_Exit(protocol::exit_fatal);
        }
        line += byte;
    }
    return line;
}

void Channel::wait_for(char expected) {
    if (answer() != expected) {
        std::_Exit(protocol::exit_fatal);
    }
}

}  // namespace cugrade::harness
