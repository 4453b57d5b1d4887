#include "channel.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

namespace cugrade::harness {

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

char Channel::answer() {
    char byte = 0;
    ssize_t got = 0;
    do {
        got = ::read(fd_, &byte, 1);
    } while (got < 0 && errno == EINTR);
    if (got != 1) {
        std::_Exit(protocol::exit_fatal);
    }
    return byte;
}

std::string Channel::receive_line(std::size_t limit) {
    std::string line;
    for (char byte = answer(); byte != '\n'; byte = answer()) {
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
