// Compiler messages as a student reads them: stored as the compiler wrote them in the build folder, and shown with
// the submission's path as this grading's user gave it.
#pragma once

#include <string>

namespace cugrade {

// nvcc's front end writes "sum.cu(12): error: ..."; this shows "student/sum.cu:12: error: ..." like every other tool.
// A message nvcc repeats word for word (once for the device, once for the host) is shown once.
std::string present_diagnostics(const std::string& output, const std::string& file_name, const std::string& shown);

}  // namespace cugrade
