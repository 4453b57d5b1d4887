#include "cpu/cuda_on_cpu.hpp"

#include <string>

namespace cugrade::cpu {

namespace {

// CUGRADE_CPU_SCHEDULE: forward (the default), reverse, or shuffled:SEED.
LaunchOptions schedule_of_this_run() {
    LaunchOptions options;
    const char* chosen = std::getenv("CUGRADE_CPU_SCHEDULE");
    const std::string schedule = chosen != nullptr ? chosen : "forward";
    if (schedule == "reverse") {
        options.schedule = Schedule::reverse;
    } else if (schedule.rfind("shuffled", 0) == 0) {
        options.schedule = Schedule::shuffled;
        const auto colon = schedule.find(':');
        options.seed = colon == std::string::npos ? 0 : std::strtoull(schedule.c_str() + colon + 1, nullptr, 10);
    }
    return options;
}

}  // namespace

std::string& last_fault() {
    thread_local std::string fault;
    return fault;
}

const char* error_string(cudaError_t error) {
    thread_local std::string text;
    text = error == cudaErrorLaunchFailure && !last_fault().empty()
               ? "unspecified launch failure: " + last_fault()
               : std::string(error_name(error));
    return text.c_str();
}

cudaError_t& last_error() {
    thread_local cudaError_t error = cudaSuccess;
    return error;
}

const char* error_name(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
        case cudaErrorLaunchTimeout: return "cudaErrorLaunchTimeout";
        case cudaErrorAssert: return "cudaErrorAssert";
        case cudaErrorHardwareStackError: return "cudaErrorHardwareStackError";
        case cudaErrorIllegalInstruction: return "cudaErrorIllegalInstruction";
        case cudaErrorMisalignedAddress: return "cudaErrorMisalignedAddress";
        case cudaErrorInvalidAddressSpace: return "cudaErrorInvalidAddressSpace";
        case cudaErrorInvalidPc: return "cudaErrorInvalidPc";
    }
    return "cudaErrorUnknown";
}

void launch_on_cpu(dim3 grid, dim3 block, std::size_t dynamic_shared_bytes, const std::function<void()>& kernel) {
    const std::size_t threads = std::size_t{block.x} * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.y > 65535 || grid.z > 65535) {
        last_error() = cudaErrorInvalidConfiguration;
        return;
    }
    LaunchOptions options = schedule_of_this_run();
    options.dynamic_shared_bytes = dynamic_shared_bytes;
    try {
        launch({grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, options, kernel);
    } catch (const KernelFault& fault) {
        // What the GPU would make of it: a launch failure, which ends the context, said with what went wrong.
        last_error() = cudaErrorLaunchFailure;
        last_fault() = fault.what();
    }
}

}  // namespace cugrade::cpu
