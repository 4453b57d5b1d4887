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
#include "device_range.hpp"
#include "../launch_shape.hpp"

namespace cugrade::replay {

// Recorded work the checker will not run: an unknown kernel, arguments of the wrong size, memory outside the case's
// buffers, an item it cannot read.
struct Refused : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One call's recorded work, read and checked once, so that a timed replay does nothing but driver calls.
class Work {
public:
    Work() = default;
    Work(Work&&) = default;
    Work& operator=(Work&&) = default;
    Work(const Work&) = delete;  // parameter pointers point into the item's own argument bytes
    Work& operator=(const Work&) = delete;
    bool empty() const { return items_.empty(); }
    std::vector<LaunchShape> kernel_launches() const;  // in the order they are launched

private:
    friend class Replayer;
    enum class Op { kernel, memset, copy, upload, function_attribute };
    struct Item {
        Op op = Op::kernel;
        std::string name;  // the kernel, for messages
        CUfunction function = nullptr;
        unsigned grid[3] = {}, block[3] = {}, shared_bytes = 0;
        bool cooperative = false;
        std::vector<std::vector<unsigned char>> arguments;
        std::vector<void*> parameters;
        CUdeviceptr address = 0;  // memset, upload
        std::size_t pitch = 0, width = 0, height = 0;
        unsigned char value = 0;
        CUDA_MEMCPY2D copy{};
        std::vector<unsigned char> data;  // upload
        CUfunction_attribute attribute{};
        int attribute_value = 0;
    };
    std::vector<Item> items_;
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

    // `work` as recorded (work_record.hpp), read and checked against the case's buffers `ranges`. Throws Refused.
    Work prepare(const nlohmann::json& work, const std::vector<DeviceRange>& ranges) const;

    // Enqueues `work` on `stream`. Throws ReplayFailure when the driver refuses an item.
    void replay(const Work& work, CUstream stream);

private:
    CUmodule module_ = nullptr;
    std::map<std::string, CUfunction> functions_;
    std::map<std::string, capture::KernelInfo> kernels_;
};

}  // namespace cugrade::replay
