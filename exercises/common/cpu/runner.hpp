// The CPU self-check's runner (docs/cpu-mode.md): the submission's process, as on the GPU (capture/runner.hpp), but it
// runs the kernels too, on the CPU (block_runner.hpp), on the arrays the checker sends for each call, mapped at the
// checker's own addresses (call_transfer.hpp says what crosses). The checker, the harness, the reference and the
// result channel are in another process, which this one never sees. The grader writes
// `int main() { return cugrade::cpu::runner::serve(&ENTRY); }` against the exercise's contract header.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "capture/call_json.hpp"
#include "cpu/call_transfer.hpp"
#include "cpu/cuda_on_cpu.hpp"
#include "protocol.hpp"
#include "seccomp_filter.hpp"
#include "submission_init.hpp"

namespace cugrade::cpu::runner {

// The runner's channel, or nothing (and a line on stderr) where it has none.
inline bool open_channel(std::FILE*& in, std::FILE*& out) {
    const char* fd_text = std::getenv(protocol::runner_fd_env);
    const int fd = fd_text != nullptr ? std::atoi(fd_text) : -1;
    in = fd > 2 ? fdopen(fd, "r") : nullptr;
    out = fd > 2 ? fdopen(dup(fd), "w") : nullptr;
    unsetenv(protocol::runner_fd_env);
    if (in == nullptr || out == nullptr) {
        std::fprintf(stderr, "runner: no channel to the checker (%s)\n", protocol::runner_fd_env);
        return false;
    }
    return true;
}

inline void send_line(std::FILE* out, const nlohmann::json& message) {
    const std::string text = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::fwrite(text.data(), 1, text.size(), out);
    std::fflush(out);
}

// The first exchange, before any code of the submission runs: the checker's choice of schedule taken, the process
// locked down (as the GPU's runner: no new processes, no network), and what contains it said.
inline bool meet_checker(std::FILE* in, std::FILE* out) {
    std::string line;
    try {
        if (!::cugrade::runner::read_line(in, line, transfer::max_reply_line_bytes)) {
            return false;
        }
        const std::string schedule = nlohmann::json::parse(line).at("schedule").get<std::string>();
        setenv("CUGRADE_CPU_SCHEDULE", schedule.c_str(), 1);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "runner: cannot read the checker's first line: %s\n", e.what());
        return false;
    }
    seccomp::Rules rules;
    rules.deny_network = true;
    rules.deny_new_processes = true;
    nlohmann::json protections = nlohmann::json::array();
    if (const char* error = seccomp::install(rules); error != nullptr) {
        protections.push_back(std::string("no seccomp filter in the submission's process: ") + error);
    } else {
        protections.push_back("seccomp (submission's process): no new processes, no network");
    }
    send_line(out, {{"protections", protections}});
    return true;
}

// What the call left of the runtime's state, for the checker to take as its own: refusals, errors, the fault.
inline nlohmann::json call_reply() {
    nlohmann::json reply = {{"refused", nlohmann::json::array()},
                            {"error", static_cast<int>(sticky_error())},
                            {"last_error", static_cast<int>(last_error())},
                            {"fault", last_fault().substr(0, transfer::max_fault_text_bytes)}};
    if (!submission_call().refused.empty()) {
        reply["refused"].push_back(submission_call().refused);
    }
    // cudaGetLastError clears it: the checker's call of it, after the call, is the one that does.
    last_error() = cudaSuccess;
    return reply;
}

template <class Result, class... Args>
int serve(Result (*entry)(Args...)) {
    std::FILE* in = nullptr;
    std::FILE* out = nullptr;
    if (!open_channel(in, out)) {
        return 2;
    }
    if (!meet_checker(in, out)) {
        return 2;
    }
    // From its first code on, the submission's host code is under the rules of a call (capture/host_rules.hpp): what
    // its initialisers were refused is refused in every call, as on the GPU.
    submission_call().running = true;
    initialise_submission();
    const std::string refused_at_start = submission_call().refused;
    std::string line;
    while (::cugrade::runner::read_line(in, line, transfer::max_reply_line_bytes)) {
        std::tuple<Args...> arguments;
        std::vector<DeviceArray> arrays;
        try {
            const nlohmann::json call = nlohmann::json::parse(line);
            arguments =
                ::cugrade::runner::decode_arguments<Args...>(call.at("arguments"), std::index_sequence_for<Args...>{});
            arrays = transfer::arrays_from_json(call.at("arrays"));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "runner: cannot read a call: %s\n", e.what());
            return 2;
        }
        for (const DeviceArray& array : arrays) {
            if (const std::string why = map_array(array); !why.empty()) {
                std::fprintf(stderr, "runner: %s\n", why.c_str());
                return 2;
            }
        }
        if (!transfer::read_arrays(in, arrays)) {
            return 2;
        }
        submission_call().refused = refused_at_start;
        std::apply(entry, arguments);
        // What the call printed reaches the grader before its reply: it counts as the output of the case that made
        // the call, visible or hidden (protocol.hpp).
        std::fflush(stdout);
        std::fflush(stderr);
        send_line(out, call_reply());
        if (!transfer::write_arrays(out, arrays)) {
            return 2;
        }
        for (const DeviceArray& array : arrays) {
            unmap_array(array.begin);
        }
    }
    std::fflush(nullptr);
    std::_Exit(0);  // nothing the submission registered runs after its last call
}

}  // namespace cugrade::cpu::runner
