// The machine code of a submission's kernels as `cuobjdump -sass` lists it, read for what the grader needs to know
// of it (access_width.hpp, shared_memory_use.hpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cugrade {

struct SassFunction {
    std::string name;                  // as listed: mangled ("_Z6add_2dPKfS0_mmPf")
    std::vector<std::string> opcodes;  // in order, modifiers kept: "LDG.E.128.CONSTANT"
};

// The functions of a listing; none where it holds no machine code (an error message, PTX alone).
std::vector<SassFunction> read_sass(const std::string& listing);

// Whether `opcode` is the instruction `name`, with or without modifiers: "LDG.E.128" is "LDG", "LDGSTS" is not.
bool opcode_is(const std::string& opcode, const std::string& name);

// The listing of `device_code` (a fatbinary or an object), from `cuobjdump` within `seconds`; nothing when the tool
// is missing or fails.
std::optional<std::string> sass_listing_of(const std::string& cuobjdump, const std::filesystem::path& device_code,
                                           double seconds = 30.0);

}  // namespace cugrade
