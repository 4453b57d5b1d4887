// On the CPU (docs/cpu-mode.md) the submission is linked into the harness and called directly: no runner, no capture
// and no replay. What the harness names of remote_submission.cuh, for a submission that is never remote.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "capture/device_range.hpp"
#include "cuda_check.cuh"
#include "entry_point.hpp"

namespace cugrade::harness {

class RemoteSubmission {
public:
    RemoteSubmission(std::vector<char>, int) { throw std::runtime_error("the CPU self-check has no runner"); }
    void set_ranges(std::vector<replay::DeviceRange>) {}
    void set_capture_only(bool) {}
    const std::vector<std::string>& protections() const { return protections_; }

private:
    std::vector<std::string> protections_;
};

inline std::vector<char> read_device_code(const std::string&) { return {}; }
inline std::vector<char> read_device_code(int) { return {}; }

inline std::unique_ptr<RemoteSubmission>& remote_submission() {
    static std::unique_ptr<RemoteSubmission> none;
    return none;
}

// The submission's entry point of this type: CUGRADE_REFERENCE (harness.cuh) defines it for the CPU build.
template <class Signature>
Signature* cpu_submission();

// The submission's call, under the rules its runner enforces on the GPU (capture/host_rules.hpp): the first work it
// was refused rejects the case, as the runner's refusal does.
template <class Result, class... Arguments>
Entry<Result(Arguments...)> under_host_rules(Result (*submission)(Arguments...)) {
    return [submission](Arguments... arguments) -> Result {
        cpu::submission_call() = {true, ""};
        struct Ended {
            ~Ended() { cpu::submission_call().running = false; }
        } ended;
        const auto refused = [] {
            if (!cpu::submission_call().refused.empty()) {
                throw RuleBroken(cpu::submission_call().refused);
            }
        };
        if constexpr (std::is_void_v<Result>) {
            submission(arguments...);
            refused();
        } else {
            Result result = submission(arguments...);
            refused();
            return result;
        }
    };
}

template <class Signature>
Entry<Signature> submission_entry() {
    return under_host_rules(cpu_submission<Signature>());
}

}  // namespace cugrade::harness
