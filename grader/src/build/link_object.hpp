// The submission's object as it is linked into the grader's program:
// - its initialisers (.init_array: nvcc's registration of the device code, global constructors) move to a section
//   that the loader does not run and the runner calls once it has locked the process down (capture/runner.hpp), so none
//   of the submission's code runs before main; its finalisers (.fini_array) move to one that nothing runs;
// - every symbol it defines becomes hidden: none is exported, so none can replace a function of the libraries the
//   program loads (the C library, the C++ library, the driver).
#pragma once

#include <filesystem>

#include "build/toolchain.hpp"
#include "build/object_file.hpp"
#include "protocol.hpp"

namespace cugrade {

#define CUGRADE_STRINGIFY_NAME(name) #name
#define CUGRADE_STRINGIFY(name) CUGRADE_STRINGIFY_NAME(name)
inline constexpr const char* submission_init_section = CUGRADE_STRINGIFY(CUGRADE_SUBMISSION_INIT_SECTION);
inline constexpr const char* submission_fini_section = CUGRADE_STRINGIFY(CUGRADE_SUBMISSION_FINI_SECTION);

// Writes `output` from `object` (whose contents read_object gave). Throws std::runtime_error.
void prepare_for_link(const std::filesystem::path& object, const ObjectFile& contents,
                      const std::filesystem::path& output, const Toolchain& toolchain);

}  // namespace cugrade
