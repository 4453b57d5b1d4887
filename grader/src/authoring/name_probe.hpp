// Whether a name is already taken at global scope by the headers an exercise's code sees (the C and C++ libraries,
// POSIX, CUDA), found by the compiler itself: nvcc compiles a small probe that includes them, so the answer is the
// headers' own, on this machine, not a list of names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "build/toolchain.hpp"

namespace cugrade {

struct NameOwner {
    std::string library;  // "the C library", "the C++ library" or "CUDA"; "" when the compiler did not say where
    std::string header;   // where, relative to its include folder: "unistd.h", "crt/math_functions.h"
    bool macro = false;
};

// The headers a probe includes: every system, C++ and CUDA header the course's shared code includes (the harness,
// its runner and capture runtime, exercises/common), the skeleton's, and the C headers a student's file commonly
// adds (<cassert>, <ctime>). Headers of libraries whose names live in their own namespace (CUB, Boost, nlohmann,
// NVTX, CUPTI) are left out.
const std::vector<std::string>& probe_headers();

// Who declares `name` (an identifier that is not a keyword) at global scope, as a function, variable, type,
// template, namespace or macro; nothing when it is free. Throws UsageError when nvcc cannot compile the probe.
std::optional<NameOwner> name_owner(const std::string& name, const Toolchain& toolchain);

}  // namespace cugrade
