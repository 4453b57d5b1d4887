// The CPU self-check's memory faults, told as the GPU's memcheck tells them: a kernel's read or write next to an
// array is a memory_error with the kernel, the line and the thread; one far from every array stays the cuda_error
// that the GPU's illegal address is, with the line added.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/results.hpp"

namespace cugrade {

// Finds the facts a fault left in a case's detail (protocol::cpu_fault_marker), reads the line of each from
// `program`'s line tables (addr2line), preferring a frame in one of `student_files` (file names), and rewrites the
// case with them.
void explain_cpu_faults(const std::filesystem::path& program, const std::vector<std::string>& student_files,
                        RunResult& run);

}  // namespace cugrade
