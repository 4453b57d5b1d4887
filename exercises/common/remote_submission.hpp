// The checker's side of capture and replay: the submission's entry point, called through the runner. Each call
// sends the arguments, receives the work the submission's host code recorded, refuses what breaks the rules, and
// replays the rest on the checker's stream (capture/replay.hpp), so the timing brackets around it are unchanged.
// Its JSON and the replayer live in remote_submission.cpp: an exercise's CUDA translation unit sees this alone.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "capture/call_arguments.hpp"
#include "capture/device_range.hpp"
#include "entry_point.hpp"
#include "launch_shape.hpp"

namespace cugrade::harness {

class RemoteSubmission {
public:
    // `device_code` is the submission's fatbinary (read_device_code); `fd` is the checker's end of the channel to
    // the runner, which this object owns. CUDA must be initialised.
    RemoteSubmission(std::vector<char> device_code, int fd);
    ~RemoteSubmission();
    RemoteSubmission(const RemoteSubmission&) = delete;
    RemoteSubmission& operator=(const RemoteSubmission&) = delete;

    // What contains the submission's process, in the report's words.
    const std::vector<std::string>& protections() const;

    // The buffers the next call's work may touch.
    void set_ranges(std::vector<replay::DeviceRange> ranges);

    // One call: throws RuleBroken for refused work, RunnerGone when the runner ended, CudaFailure when the driver
    // refused a launch, as the runtime would have in the submission's own process.
    // While set, calls are captured and kept, not replayed: a timed call then replays what was captured for the
    // same arguments, so the round trip to the runner stays outside the timing brackets.
    void set_capture_only(bool capture_only);

    // The kernels the last replayed call launched, in order.
    std::vector<LaunchShape> last_launches() const;

    void call(const runner::CallArguments& arguments, cudaStream_t stream);

private:
    struct State;
    std::unique_ptr<State> state_;
};

// The submission's fatbinary, from its file or from a descriptor the grader handed over (which it closes); throws
// std::runtime_error when it cannot be read.
std::vector<char> read_device_code(const std::string& path);
std::vector<char> read_device_code(int fd);

// The one remote submission of this checker process, opened by the case loop (plan_loop.cpp).
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
            remote_submission()->call(runner::call_arguments(arguments...), stream);
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
