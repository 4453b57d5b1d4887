#include "remote_submission.hpp"

#include <cuda.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "capture/replay.hpp"
#include "capture/runner.hpp"
#include "capture/tables.hpp"
#include "cuda_check.cuh"

namespace cugrade::harness {

namespace {

// A call's recorded work is small: a few launches and at most a few uploads of work_record::max_upload_bytes.
constexpr std::size_t max_reply_bytes = std::size_t{16} << 20;

capture::DeviceInfo device_info() {
    capture::DeviceInfo device;
    CUGRADE_CUDA_CHECK(cudaGetDeviceProperties(&device.properties, 0));
    for (int attribute = 1; attribute < 256; ++attribute) {
        int value = 0;
        if (cudaDeviceGetAttribute(&value, static_cast<cudaDeviceAttr>(attribute), 0) == cudaSuccess) {
            device.attributes[attribute] = value;
        }
    }
    cudaGetLastError();  // the attributes this device does not have
    return device;
}

}  // namespace

struct RemoteSubmission::State {
    int fd = -1;
    std::vector<char> image;
    std::unique_ptr<replay::Replayer> replayer;
    std::FILE* in = nullptr;
    std::FILE* out = nullptr;
    std::vector<replay::DeviceRange> ranges;
    std::vector<std::string> protections;
    bool capture_only = false;
    std::optional<runner::CallArguments> pending_arguments;
    replay::Work pending_work;
    replay::Work last_work;

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

    replay::Work capture(const runner::CallArguments& arguments) {
        send({{"arguments", runner::arguments_json(arguments)}});
        std::string line;
        nlohmann::json reply;
        try {
            if (!runner::read_line(in, line, max_reply_bytes)) {
                throw RunnerGone("the submission's process ended during the call");
            }
            reply = nlohmann::json::parse(line);
        } catch (const std::length_error&) {
            throw RuleBroken("its process sent the grader more than 16 MiB of recorded work for one call");
        } catch (const nlohmann::json::exception&) {
            throw RuleBroken("its process sent the grader something other than its recorded work");
        }
        const bool well_formed = reply.is_object() && reply.value("work", nlohmann::json::array()).is_array() &&
                                 reply.value("refused", nlohmann::json::array()).is_array();
        if (!well_formed) {
            throw RuleBroken("its process sent the grader something other than its recorded work");
        }
        if (const auto& refused = reply.value("refused", nlohmann::json::array()); !refused.empty()) {
            const auto& first = refused[0];
            if (!first.is_object() || !first.value("call", nlohmann::json()).is_string() ||
                !first.value("why", nlohmann::json()).is_string()) {
                throw RuleBroken("its process sent the grader something other than its recorded work");
            }
            throw RuleBroken(first["call"].get<std::string>() + ": " + first["why"].get<std::string>());
        }
        try {
            return replayer->prepare(reply.value("work", nlohmann::json::array()), ranges);
        } catch (const replay::Refused& e) {
            throw RuleBroken(e.what());
        }
    }

    // The work stays alive until the next call's, past the driver's use of its argument and upload bytes.
    void replay(replay::Work work, cudaStream_t stream) {
        last_work = std::move(work);
        try {
            replayer->replay(last_work, reinterpret_cast<CUstream>(stream));
        } catch (const replay::ReplayFailure& e) {
            throw CudaFailure(static_cast<cudaError_t>(e.code), e.what());
        }
    }
};

std::vector<char> read_device_code(int fd) {
    std::vector<char> image;
    char chunk[1 << 16];
    for (ssize_t got; (got = ::read(fd, chunk, sizeof chunk)) != 0;) {
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            ::close(fd);
            throw std::runtime_error(std::string("cannot read the submission's device code: ") + std::strerror(errno));
        }
        image.insert(image.end(), chunk, chunk + got);
    }
    ::close(fd);
    return image;
}

std::vector<char> read_device_code(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        throw std::runtime_error("cannot read the submission's device code " + path);
    }
    return read_device_code(fd);
}

RemoteSubmission::RemoteSubmission(std::vector<char> device_code, int fd) : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.fd = fd;
    s.image = std::move(device_code);
    s.replayer = std::make_unique<replay::Replayer>(s.image.empty() ? nullptr : s.image.data());
    s.in = fdopen(dup(fd), "r");
    s.out = fdopen(dup(fd), "w");
    s.send(capture::tables_to_json(s.replayer->kernels(), device_info()));
    // The runner's first line, written before any code of the submission runs there.
    std::string line;
    try {
        if (!runner::read_line(s.in, line, max_reply_bytes)) {
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

void RemoteSubmission::set_capture_only(bool capture_only) { state_->capture_only = capture_only; }

std::vector<LaunchShape> RemoteSubmission::last_launches() const { return state_->last_work.kernel_launches(); }

void RemoteSubmission::call(const runner::CallArguments& arguments, cudaStream_t stream) {
    State& s = *state_;
    if (!s.capture_only && s.pending_arguments == arguments) {
        s.pending_arguments.reset();
        s.replay(std::move(s.pending_work), stream);
        return;
    }
    replay::Work work = s.capture(arguments);
    if (s.capture_only) {
        s.pending_arguments = arguments;
        s.pending_work = std::move(work);
        return;
    }
    s.replay(std::move(work), stream);
}

}  // namespace cugrade::harness
