// `cugrade new NAME`: a new exercise in a course, complete enough to build and grade at once (its reference passes,
// its template fails), with TODO(instructor) where the instructor makes it their own (docs/authoring.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "build/toolchain.hpp"

namespace cugrade {

// Throws UsageError when NAME cannot name an exercise (it becomes a file name and a C function's name: not a C++
// keyword, nor a name the C or C++ library or CUDA declares, which `toolchain`'s nvcc is asked), when a file it would
// write exists already, or when a symbolic link leads a folder it writes in out of the course; writes nothing then.
// Returns the files written, relative to the course's root.
std::vector<std::filesystem::path> new_exercise(const std::filesystem::path& course_root, const std::string& name,
                                                const std::string& title, const Toolchain& toolchain);

// "Prefix sum" from "prefix_sum": the title a new exercise gets when none is given.
std::string default_title(const std::string& name);

}  // namespace cugrade
