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
inline constexpr const char* no_2d_upload =
    "copies a 2-D block from the host; upload a small table with cudaMemcpyAsync";

// Without the call's size: a refusal may become the reason every case of the submission is rejected for
// (grader/src/score/score.cpp, keep_nothing_after_rejection), and the size of a hidden case's upload would tell its
// size.
inline std::string upload_too_large() {
    return "copies more than " + std::to_string(work_record::max_upload_bytes) +
           " bytes from the host in one call; upload a small table only";
}
// A copy between device buffers (cudaMemcpyDeviceToDevice, or cudaMemcpyDefault) that reaches memory outside them:
// on the GPU the replay refuses it (capture/replay.cpp), on the CPU the self-check's runtime (cpu/cuda_on_cpu.hpp).
inline constexpr const char* copy_outside_to = "copies to memory outside the output and scratch buffers it is given";
inline constexpr const char* copy_outside_from = "copies from memory outside the buffers it is given";

}  // namespace cugrade::host_rules
