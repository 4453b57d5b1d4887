// The checker's side of the CPU self-check's runner (docs/cpu-mode.md): remote_submission.hpp's RemoteSubmission for
// the CPU. Each call sends the arguments and the arrays that hold the buffers the call may touch (call_transfer.hpp),
// takes back what the runner's call left in them and the runtime's state after it, and raises what the submission's
// call would have raised in this process: RuleBroken for a refusal, the runner's error for the harness's next
// cudaGetLastError. The harness's checks are the same as on the GPU.
#include "remote_submission.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "capture/call_json.hpp"
#include "cpu/call_transfer.hpp"
#include "cpu/cuda_on_cpu.hpp"
#include "cuda_check.cuh"

namespace cugrade::harness {

namespace {

const char* const not_a_reply = "its process sent the grader something other than its call's results";

// The runtime's error of a reply's field: one that CUDA has, or the reply is not the runner's.
cudaError_t error_of(const nlohmann::json& value) {
    const auto code = static_cast<cudaError_t>(value.get<int>());
    if (code != cudaSuccess && std::string(cpu::error_name(code)) == "cudaErrorUnknown") {
        throw RuleBroken(not_a_reply, true);
    }
    return code;
}

}  // namespace

struct RemoteSubmission::State {
    int fd = -1;
    std::FILE* in = nullptr;
    std::FILE* out = nullptr;
    std::vector<replay::DeviceRange> ranges;
    std::vector<std::string> protections;

    ~State() {
        if (in != nullptr) std::fclose(in);
        if (out != nullptr) std::fclose(out);
        if (fd >= 0) ::close(fd);
    }

    void send(const nlohmann::json& message) {
        const std::string line = message.dump() + "\n";
        std::fwrite(line.data(), 1, line.size(), out);
        std::fflush(out);
    }

    // The whole arrays (guard regions included) that hold the ranges, each once, in the order of the ranges.
    std::vector<cpu::DeviceArray> arrays() const {
        std::vector<cpu::DeviceArray> found;
        std::map<std::uintptr_t, bool> seen;
        for (const replay::DeviceRange& range : ranges) {
            const cpu::DeviceArray array = cpu::array_holding(static_cast<std::uintptr_t>(range.begin));
            if (array.begin == 0) {
                throw std::runtime_error("a buffer of the case is not an array of cudaMalloc's");
            }
            if (!seen[array.begin]) {
                seen[array.begin] = true;
                found.push_back(array);
            }
        }
        return found;
    }

    // The runner's reply line. Throws RuleBroken for a reply that is not one (whatever follows it cannot be read
    // either: the cases left run with a fresh runner), RunnerGone where the runner ended.
    nlohmann::json receive_reply() {
        std::string line;
        nlohmann::json reply;
        try {
            if (!runner::read_line(in, line, cpu::transfer::max_reply_line_bytes)) {
                throw RunnerGone("the submission's process ended during the call");
            }
            reply = nlohmann::json::parse(line);
            if (!reply.is_object() || !reply.at("refused").is_array() || !reply.at("fault").is_string()) {
                throw RuleBroken(not_a_reply, true);
            }
            reply.at("error").get<int>();
            reply.at("last_error").get<int>();
            for (const auto& refusal : reply.at("refused")) {
                refusal.get<std::string>();
            }
        } catch (const std::length_error&) {
            throw RuleBroken(not_a_reply, true);
        } catch (const nlohmann::json::exception&) {
            throw RuleBroken(not_a_reply, true);
        }
        return reply;
    }

    // What the submission's call would have left in this process's runtime, had it run here.
    static void take_state(const nlohmann::json& reply) {
        const cudaError_t sticky = error_of(reply.at("error"));
        const cudaError_t last = error_of(reply.at("last_error"));
        if (sticky != cudaSuccess) {
            cpu::sticky_error() = sticky;
            cpu::last_fault() = reply.at("fault").get<std::string>().substr(0, cpu::transfer::max_fault_text_bytes);
        }
        if (last != cudaSuccess) {
            cpu::last_error() = last;
        }
    }
};

std::vector<char> read_device_code(int fd) {
    ::close(fd);
    return {};
}

std::vector<char> read_device_code(const std::string&) { return {}; }

RemoteSubmission::RemoteSubmission(std::vector<char>, int fd) : state_(std::make_unique<State>()) {
    State& s = *state_;
    // A runner gone while its arrays are sent is RunnerGone, from the failed write, not this process's end.
    std::signal(SIGPIPE, SIG_IGN);
    s.fd = fd;
    s.in = fdopen(dup(fd), "r");
    s.out = fdopen(dup(fd), "w");
    const char* schedule = std::getenv("CUGRADE_CPU_SCHEDULE");
    s.send({{"schedule", schedule != nullptr ? schedule : "forward"}});
    // The runner's first line, written before any code of the submission runs there.
    std::string line;
    try {
        if (!runner::read_line(s.in, line, cpu::transfer::max_reply_line_bytes)) {
            throw std::runtime_error("the submission's process ended before it was ready");
        }
        s.protections = nlohmann::json::parse(line).at("protections").get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("the submission's process did not say how it is contained: ") + e.what());
    }
}

RemoteSubmission::~RemoteSubmission() = default;

const std::vector<std::string>& RemoteSubmission::protections() const { return state_->protections; }

void RemoteSubmission::set_ranges(std::vector<replay::DeviceRange> ranges) { state_->ranges = std::move(ranges); }

// Nothing is timed on the CPU: every call is made as it comes.
void RemoteSubmission::set_capture_only(bool) {}

std::vector<LaunchShape> RemoteSubmission::last_launches() const { return {}; }

void RemoteSubmission::call(const runner::CallArguments& arguments, cudaStream_t) {
    State& s = *state_;
    const std::vector<cpu::DeviceArray> arrays = s.arrays();
    s.send({{"arguments", runner::arguments_json(arguments)}, {"arrays", cpu::transfer::arrays_json(arrays)}});
    if (!cpu::transfer::write_arrays(s.out, arrays)) {
        throw RunnerGone("the submission's process ended before its call");
    }
    const nlohmann::json reply = s.receive_reply();
    if (!cpu::transfer::read_arrays(s.in, arrays)) {
        throw RunnerGone("the submission's process ended during the call");
    }
    State::take_state(reply);
    if (!reply.at("refused").empty()) {
        throw RuleBroken(reply.at("refused")[0].get<std::string>());
    }
}

}  // namespace cugrade::harness
