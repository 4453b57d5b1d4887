// The checker's side of capture and replay: the submission's device code loaded into the checker's context, and the
// work its host code recorded in the runner (work_record.hpp) replayed there, on the checker's stream, under the
// checker's clocks. Only the driver API: the checker's own CUDA runtime state is not touched.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture_runtime.hpp"

namespace cugrade::replay {

// A device buffer of the case that recorded work may touch.
struct DeviceRange {
    std::uint64_t begin = 0;
    std::uint64_t bytes = 0;
    bool writable = false;
};

// A driver call of the replay failed: the submission's work, as the runtime would have failed it in the runner.
struct ReplayFailure : std::runtime_error {
    ReplayFailure(CUresult code, const std::string& what) : std::runtime_error(what), code(code) {}
    CUresult code;
};

class Replayer {
public:
    // `image` is the submission's fatbinary (or cubin), as nvcc built it.
    explicit Replayer(const void* image);
    ~Replayer();
    Replayer(const Replayer&) = delete;
    Replayer& operator=(const Replayer&) = delete;

    // Every kernel of the module, by device name, with what the runner's capture runtime must know of it.
    const std::map<std::string, capture::KernelInfo>& kernels() const { return kernels_; }

    // What in `work` the checker will not replay (an unknown kernel, arguments of the wrong size, memory outside
    // `ranges`), or "" when all of it may run.
    std::string refusal(const nlohmann::json& work, const std::vector<DeviceRange>& ranges) const;

    // Enqueues `work` on `stream`; call refusal() first. Throws ReplayFailure when the driver refuses an item.
    void replay(const nlohmann::json& work, CUstream stream);

private:
    CUmodule module_ = nullptr;
    std::map<std::string, CUfunction> functions_;
    std::map<std::string, capture::KernelInfo> kernels_;
    std::vector<std::vector<unsigned char>> uploads_;  // host bytes of the last replay, alive until the next
};

}  // namespace cugrade::replay
