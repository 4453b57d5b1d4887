// What a submission's host code may not do during a call, in the words of its refusal: the runner's capture refuses
// these on the GPU (capture_runtime.cpp), the CPU self-check's runtime on the CPU (cpu/cuda_on_cpu.hpp), so that a
// submission is rejected for the same reason on both.
#pragma once

#include <cstddef>
#include <string>

#include "work_record.hpp"

namespace cugrade::host_rules {

inline constexpr const char* no_allocation = "allocates device memory; use the scratch memory you are given";
inline constexpr const char* no_host_reads =
    "reads device memory from the host; leave the results in the buffers you are given";
inline constexpr const char* no_copy_back =
    "reads device memory from the host; compute on the GPU and leave the results in the buffers you are given";
inline constexpr const char* no_2d_upload = "copies a 2-D block from the host; upload a small table with cudaMemcpyAsync";

inline std::string upload_too_large(std::size_t bytes) {
    return "copies " + std::to_string(bytes) + " bytes from the host; a call may upload " +
           std::to_string(work_record::max_upload_bytes) + " at most";
}

}  // namespace cugrade::host_rules
