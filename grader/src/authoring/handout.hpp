// `cugrade handout OUT`: the student kit of a course (kit.hpp), a folder and a .tar.gz of it. It holds what builds
// cugrade, each exercise's contract, README, template and visible rubric, and the harness with the reference already
// compiled into one object for every GPU architecture, never the reference's source or a hidden case.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "course/exercise.hpp"
#include "build/toolchain.hpp"

namespace cugrade {

struct HandoutOptions {
    std::filesystem::path output;        // the kit's folder: new, or a kit made before (replaced)
    std::vector<std::string> exercises;  // empty: every exercise of the course
    std::vector<std::string> arches;     // "sm_90" ...; empty: every one from sm_75 that nvcc builds
    std::function<void(const std::string&)> progress;
};

struct Handout {
    std::filesystem::path folder;
    std::filesystem::path tarball;
    Kit kit;
};

// Throws UsageError for a course that cannot make a kit (an exercise without its reference, an architecture nvcc
// cannot build, an output folder that is not a kit), std::runtime_error when writing fails.
Handout make_handout(const Course& course, const Toolchain& toolchain, const HandoutOptions& options);

// The architectures nvcc builds SASS for, from sm_75 on, in order: "sm_75", "sm_80", ...
std::vector<std::string> kit_architectures(const Toolchain& toolchain);

}  // namespace cugrade
