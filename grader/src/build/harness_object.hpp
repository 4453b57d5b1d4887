// The exercise's harness and the instructor's reference compiled into one object, harness.o: the reference's entry
// points renamed (cugrade_reference_NAME) so that the harness calls them beside the submission's. Grading builds it
// for this GPU; a kit (handout.cpp) for every architecture, with the reference's own names made opaque.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "course/exercise.hpp"
#include "build/toolchain.hpp"

namespace cugrade {

inline constexpr const char* reference_prefix = "cugrade_reference_";

struct HarnessRecipe {
    std::vector<std::string> arch_flags;     // {"-arch=sm_90"}, or a kit's -gencode flags
    std::filesystem::path reference_source;  // the reference as compiled (a kit's with opaque names)
    bool line_info = true;  // -lineinfo; a kit's objects carry no line table (it names the files and their folders)
};

// nvcc with cugrade's flags, `arch_flags`, and the include folders of the exercise, exercises/common and the
// toolchain: how every course file is compiled.
std::vector<std::string> course_compile_command(const Exercise& exercise, const Toolchain& toolchain,
                                                const std::vector<std::string>& arch_flags);

// Writes `dir`/harness.o. Throws UsageError when the harness or the reference does not compile.
void compile_harness_object(const Exercise& exercise, const Toolchain& toolchain, const HarnessRecipe& recipe,
                            const std::filesystem::path& dir);

}  // namespace cugrade
