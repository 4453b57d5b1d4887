#include "diagnose/access_width.hpp"

#include <algorithm>
#include <sstream>

#include "base/kernel_name.hpp"
#include "build/object_file.hpp"
#include "inspect/sass_listing.hpp"

namespace cugrade {

namespace {

// The bytes one thread moves with an instruction of this opcode ("LDG.E.128.CONSTANT"): its width modifier, 4 bytes
// without one.
int access_bytes(const std::string& opcode) {
    std::istringstream parts(opcode);
    int bytes = 4;
    for (std::string part; std::getline(parts, part, '.');) {
        if (part == "U8" || part == "S8") {
            bytes = 1;
        } else if (part == "U16" || part == "S16") {
            bytes = 2;
        } else if (part == "64") {
            bytes = 8;
        } else if (part == "128") {
            bytes = 16;
        } else if (part == "256") {
            bytes = 32;
        }
    }
    return bytes;
}

}  // namespace

KernelAccessWidths read_access_widths(const std::string& sass) {
    KernelAccessWidths widths;
    for (const SassFunction& function : read_sass(sass)) {
        AccessWidths& kernel = widths[kernel_name(demangle(function.name))];
        for (const std::string& opcode : function.opcodes) {
            // Global loads and stores, and generic ones (LD, ST), which reach global memory through the same path.
            if (opcode_is(opcode, "LDG") || opcode_is(opcode, "LD")) {
                kernel.widest_load_bytes = std::max(kernel.widest_load_bytes, access_bytes(opcode));
            } else if (opcode_is(opcode, "STG") || opcode_is(opcode, "ST")) {
                kernel.widest_store_bytes = std::max(kernel.widest_store_bytes, access_bytes(opcode));
            }
        }
    }
    return widths;
}

}  // namespace cugrade
