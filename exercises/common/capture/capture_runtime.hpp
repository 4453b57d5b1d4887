// The capture runtime: a CUDA runtime for the submission's host code that runs nothing on a GPU. It stands in for
// libcudart in the runner program (the submission's object, the runner's loop, this runtime; no libcudart, no
// libcuda, no GPU device in its sandbox). Each call of the submission's entry point leaves a list of work (kernel
// launches with their argument bytes, memsets, copies between device buffers, copies into its own __constant__ and
// __device__ symbols), which the checker process replays, checks and times in a context the submission never
// touches. Calls that would need the device's answer (reading device memory, allocating it, timing with events)
// fail with cudaErrorNotSupported and are noted as refused, with the reason, so the case is rejected.
//
// The runner is one process with one submission, so this runtime's state is its process's: the CUDA runtime API it
// stands in for is process-wide by definition.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cugrade::capture {

// What the checker knows about one of the submission's kernels, from its own load of the submission's device code.
struct KernelInfo {
    std::vector<std::size_t> parameter_sizes;  // in declaration order
    cudaFuncAttributes attributes{};
};

// What the device queries answer: the checker's device.
struct DeviceInfo {
    cudaDeviceProp properties{};
    std::map<int, int> attributes;  // cudaDeviceAttr -> value
};

void set_device(const DeviceInfo& device);
void set_kernels(std::map<std::string, KernelInfo> kernels);

// The device names of the kernels and symbols the submission registered (nvcc's registration code, run by
// initialise_submission()).
std::vector<std::string> registered_kernels();

// The work recorded since the last call, and the calls refused: {"work": [...], "refused": [...]} (work_record.hpp).
nlohmann::json take_work();

}  // namespace cugrade::capture
