// The runner's main loop: the submission's entry point called with the arguments the checker sends, the work each
// call recorded sent back. One JSON line each way per call, on the descriptor CUGRADE_RUNNER_FD names:
//   checker -> runner, first:  the tables (tables.hpp)
//   runner -> checker, first:  {"protections": [...]}    what contains it, before any code of the submission runs
//   checker -> runner, then:   {"arguments": [...]}        pointers as addresses, numbers as numbers, the stream null
//   runner -> checker:         {"work": [...], "refused": [...]}   (work_record.hpp)
// The runner ends when the checker closes its end. An exercise needs no runner of its own: the grader writes
// `int main() { return cugrade::runner::serve(&ENTRY); }` against the exercise's contract header.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "call_arguments.hpp"
#include "call_json.hpp"
#include "capture_runtime.hpp"
#include "protocol.hpp"
#include "seccomp_filter.hpp"
#include "submission_init.hpp"
#include "tables.hpp"

namespace cugrade::runner {

using protocol::runner_fd_env;

template <class Result, class... Args>
int serve(Result (*entry)(Args...)) {
    const char* fd_text = std::getenv(runner_fd_env);
    const int fd = fd_text != nullptr ? std::atoi(fd_text) : -1;
    std::FILE* in = fd > 2 ? fdopen(fd, "r") : nullptr;
    std::FILE* out = fd > 2 ? fdopen(dup(fd), "w") : nullptr;
    if (in == nullptr || out == nullptr) {
        std::fprintf(stderr, "runner: no channel to the checker (%s)\n", runner_fd_env);
        return 2;
    }
    unsetenv(runner_fd_env);
    std::string line;
    try {
        if (!read_line(in, line)) {
            return 0;
        }
        std::map<std::string, capture::KernelInfo> kernels;
        capture::DeviceInfo device;
        capture::tables_from_json(nlohmann::json::parse(line), kernels, device);
        capture::set_kernels(std::move(kernels));
        capture::set_device(device);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "runner: cannot read the checker's tables: %s\n", e.what());
        return 2;
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
    const std::string ready = nlohmann::json{{"protections", protections}}.dump() + "\n";
    std::fwrite(ready.data(), 1, ready.size(), out);
    std::fflush(out);
    initialise_submission();
    // What registration refused (a __managed__ variable) is refused in every call.
    const nlohmann::json refused_at_registration = capture::take_work()["refused"];
    while (read_line(in, line)) {
        std::tuple<Args...> arguments;
        try {
            arguments = decode_arguments<Args...>(nlohmann::json::parse(line).at("arguments"),
                                                  std::index_sequence_for<Args...>{});
        } catch (const std::exception& e) {
            std::fprintf(stderr, "runner: cannot read a call: %s\n", e.what());
            return 2;
        }
        std::apply(entry, arguments);
        // What the call printed reaches the grader before its reply: it counts as the output of the case that made
        // the call, visible or hidden (protocol.hpp).
        std::fflush(stdout);
        std::fflush(stderr);
        nlohmann::json reply = capture::take_work();
        for (const auto& refusal : refused_at_registration) {
            reply["refused"].push_back(refusal);
        }
        const std::string text = reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
        std::fwrite(text.data(), 1, text.size(), out);
        std::fflush(out);
    }
    std::fflush(nullptr);
    std::_Exit(0);  // nothing the submission registered runs after its last call
}

}  // namespace cugrade::runner
