// On the CPU (docs/cpu-mode.md) the submission is linked into the harness and called directly: no runner, no capture
// and no replay. What the harness names of remote_submission.cuh, for a submission that is never remote.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/device_range.hpp"
#include "entry_point.hpp"

namespace cugrade::harness {

class RemoteSubmission {
public:
    RemoteSubmission(const std::string&, int) { throw std::runtime_error("the CPU self-check has no runner"); }
    void set_ranges(std::vector<replay::DeviceRange>) {}
    void set_capture_only(bool) {}
    const std::vector<std::string>& protections() const { return protections_; }

private:
    std::vector<std::string> protections_;
};

inline std::unique_ptr<RemoteSubmission>& remote_submission() {
    static std::unique_ptr<RemoteSubmission> none;
    return none;
}

// The submission's entry point of this type: CUGRADE_REFERENCE (harness.cuh) defines it for the CPU build.
template <class Signature>
Signature* cpu_submission();

template <class Signature>
Entry<Signature> submission_entry() {
    return cpu_submission<Signature>();
}

}  // namespace cugrade::harness
