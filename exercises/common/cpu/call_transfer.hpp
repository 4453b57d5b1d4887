// What crosses between the CPU self-check's two processes for a call (docs/cpu-mode.md): the checker holds the
// harness, the reference and the case's arrays; the runner (cpu/runner.hpp) holds the submission and runs its host
// code and its kernels on arrays mapped at the checker's addresses. On the descriptor CUGRADE_RUNNER_FD names, one
// JSON line each way per call, each followed by the bytes of the arrays the call names, in the line's order:
//   checker -> runner, first:  {"schedule": S}           the order threads resume in (CUGRADE_CPU_SCHEDULE)
//   runner -> checker, first:  {"protections": [...]}    what contains it, before any code of the submission runs
//   checker -> runner, then:   {"arguments": [...], "arrays": [{"begin": A, "bytes": N}, ...]}, then the bytes
//   runner -> checker:         {"refused": [TEXT...], "error": E, "last_error": E, "fault": TEXT}, then the bytes
// "arrays" are the whole arrays (cudaMalloc's, guard regions included) that hold the buffers the call may touch:
// its inputs, outputs and scratch (RemoteSubmission::set_ranges); all come back, inputs too, so that the checker's
// own checks see what the call left. "error" is the runtime's sticky error after the call (a kernel's fault, which
// spoils the context), "last_error" what cudaGetLastError would return, "fault" what the fault was (the text of
// cudaGetErrorString).
// The runner ends when the checker closes its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cpu/cuda_on_cpu.hpp"

namespace cugrade::cpu::transfer {

// What one reply may hold besides the arrays: the refusals and a fault's text.
inline constexpr std::size_t max_reply_line_bytes = std::size_t{1} << 20;
inline constexpr std::size_t max_fault_text_bytes = 4096;

inline nlohmann::json arrays_json(const std::vector<DeviceArray>& arrays) {
    nlohmann::json list = nlohmann::json::array();
    for (const DeviceArray& array : arrays) {
        list.push_back({{"begin", static_cast<std::uint64_t>(array.begin)}, {"bytes", array.bytes}});
    }
    return list;
}

// Throws nlohmann::json::exception for what is not such a list.
inline std::vector<DeviceArray> arrays_from_json(const nlohmann::json& list) {
    std::vector<DeviceArray> arrays;
    for (const auto& item : list) {
        arrays.push_back(
            {static_cast<std::uintptr_t>(item.at("begin").get<std::uint64_t>()), item.at("bytes").get<std::size_t>()});
    }
    return arrays;
}

// The arrays' bytes, from memory to `out` or from `in` to memory; false where the stream ended or failed.
inline bool write_arrays(std::FILE* out, const std::vector<DeviceArray>& arrays) {
    for (const DeviceArray& array : arrays) {
        if (std::fwrite(reinterpret_cast<const void*>(array.begin), 1, array.bytes, out) != array.bytes) {
            return false;
        }
    }
    return std::fflush(out) == 0;
}

inline bool read_arrays(std::FILE* in, const std::vector<DeviceArray>& arrays) {
    for (const DeviceArray& array : arrays) {
        if (std::fread(reinterpret_cast<void*>(array.begin), 1, array.bytes, in) != array.bytes) {
            return false;
        }
    }
    return true;
}

}  // namespace cugrade::cpu::transfer
