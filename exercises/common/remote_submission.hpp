// The checker's side of capture and replay: the submission's entry point, called through the runner. Each call
// sends the arguments, receives the work the submission's host code recorded, refuses what breaks the rules, and
// replays the rest on the checker's stream (capture/replay.hpp), so the timing brackets around it are unchanged.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capture/replay.hpp"
#include "capture/runner.hpp"
#include "capture/tables.hpp"
#include "cuda_check.cuh"
#include "entry_point.hpp"

namespace cugrade::harness {

class RemoteSubmission {
public:
    // `device_code` is the submission's fatbinary; the runner's end of the channel is the descriptor the grader
    // names in CUGRADE_RUNNER_FD. CUDA must be initialised.
    RemoteSubmission(const std::string& device_code, int fd) : fd_(fd) {
        std::FILE* file = std::fopen(device_code.c_str(), "rb");
        if (file == nullptr) {
            throw std::runtime_error("cannot read the submission's device code " + device_code);
        }
        for (int c; (c = std::fgetc(file)) != EOF;) {
            image_.push_back(static_cast<char>(c));
        }
        std::fclose(file);
        replayer_ = std::make_unique<replay::Replayer>(image_.empty() ? nullptr : image_.data());
        in_ = fdopen(dup(fd_), "r");
        out_ = fdopen(dup(fd_), "w");
        send(capture::tables_to_json(replayer_->kernels(), device_info()));
        // The runner's first line, written before any code of the submission runs there.
        std::string line;
        try {
            if (!runner::read_line(in_, line, max_reply_bytes)) {
                throw std::runtime_error("the submission's process ended before it was ready");
            }
            protections_ = nlohmann::json::parse(line).at("protections").get<std::vector<std::string>>();
        } catch (const nlohmann::json::exception& e) {
            throw std::runtime_error(std::string("the submission's process did not say how it is contained: ") +
                                     e.what());
        }
    }
    ~RemoteSubmission() {
        if (in_ != nullptr) std::fclose(in_);
        if (out_ != nullptr) std::fclose(out_);
        ::close(fd_);
    }

    // What contains the submission's process, in the report's words.
    const std::vector<std::string>& protections() const { return protections_; }

    // The buffers the next call's work may touch.
    void set_ranges(std::vector<replay::DeviceRange> ranges) { ranges_ = std::move(ranges); }

    // One call: throws RuleBroken for refused work, RunnerGone when the runner ended, CudaFailure when the driver
    // refused a launch, as the runtime would have in the submission's own process.
    // While set, calls are captured and kept, not replayed: a timed call then replays what was captured for the
    // same arguments, so the round trip to the runner stays outside the timing brackets.
    void set_capture_only(bool capture_only) { capture_only_ = capture_only; }

    // The kernels the last replayed call launched, in order.
    std::vector<LaunchShape> last_launches() const { return last_work_.kernel_launches(); }

    void call(const nlohmann::json& arguments, cudaStream_t stream) {
        if (!capture_only_ && pending_arguments_ == arguments) {
            pending_arguments_ = nullptr;
            replay(std::move(pending_work_), stream);
            return;
        }
        replay::Work work = capture(arguments);
        if (capture_only_) {
            pending_arguments_ = arguments;
            pending_work_ = std::move(work);
            return;
        }
        replay(std::move(work), stream);
    }

private:
    // A call's recorded work is small: a few launches and at most a few uploads of work_record::max_upload_bytes.
    static constexpr std::size_t max_reply_bytes = std::size_t{16} << 20;

    replay::Work capture(const nlohmann::json& arguments) {
        send({{"arguments", arguments}});
        std::string line;
        nlohmann::json reply;
        try {
            if (!runner::read_line(in_, line, max_reply_bytes)) {
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
            return replayer_->prepare(reply.value("work", nlohmann::json::array()), ranges_);
        } catch (const replay::Refused& e) {
            throw RuleBroken(e.what());
        }
    }

    // The work stays alive until the next call's, past the driver's use of its argument and upload bytes.
    void replay(replay::Work work, cudaStream_t stream) {
        last_work_ = std::move(work);
        try {
            replayer_->replay(last_work_, reinterpret_cast<CUstream>(stream));
        } catch (const replay::ReplayFailure& e) {
            throw CudaFailure(static_cast<cudaError_t>(e.code), e.what());
        }
    }

    static capture::DeviceInfo device_info() {
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

    void send(const nlohmann::json& message) {
        const std::string line = message.dump() + "\n";
        std::fwrite(line.data(), 1, line.size(), out_);
        std::fflush(out_);
    }

    int fd_;
    std::vector<char> image_;
    std::unique_ptr<replay::Replayer> replayer_;
    std::FILE* in_ = nullptr;
    std::FILE* out_ = nullptr;
    std::vector<replay::DeviceRange> ranges_;
    std::vector<std::string> protections_;
    bool capture_only_ = false;
    nlohmann::json pending_arguments_;
    replay::Work pending_work_;
    replay::Work last_work_;
};

// The one remote submission of this checker process, opened by run_plan.
inline std::unique_ptr<RemoteSubmission>& remote_submission() {
    static std::unique_ptr<RemoteSubmission> instance;
    return instance;
}

// The submission's entry point with the contract's signature, as the exercise's harness calls it.
template <class Signature>
Entry<Signature> submission_entry();

template <class Result, class... Args>
struct SubmissionEntryMaker;

template <class... Args>
struct SubmissionEntryMaker<void, Args...> {
    static Entry<void(Args...)> make() {
        return [](Args... arguments) {
            cudaStream_t stream = nullptr;
            const auto take_stream = [&stream](auto argument) {
                if constexpr (std::is_same_v<decltype(argument), cudaStream_t>) {
                    stream = argument;
                }
            };
            (take_stream(arguments), ...);
            remote_submission()->call(runner::encode_arguments(arguments...), stream);
        };
    }
};

template <class Signature>
Entry<Signature> submission_entry() {
    return []<class Result, class... Args>(Result (*)(Args...)) {
        return SubmissionEntryMaker<Result, Args...>::make();
    }(static_cast<Signature*>(nullptr));
}

}  // namespace cugrade::harness
