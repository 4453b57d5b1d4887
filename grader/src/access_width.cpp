#include "access_width.hpp"

#include <regex>
#include <sstream>

#include "course_tools.hpp"
#include "kernel_name.hpp"
#include "object_file.hpp"

namespace cugrade {
namespace fs = std::filesystem;

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

bool opcode_is(const std::string& opcode, const std::string& name) {
    return opcode == name || opcode.rfind(name + ".", 0) == 0;
}

}  // namespace

KernelAccessWidths read_access_widths(const std::string& sass) {
    // "        Function : _Z6add_2dPKfS0_mmPf"
    static const std::regex function(R"(^\s*Function\s*:\s*(\S+)\s*$)");
    // "        /*00f0*/   @!P0 LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;   /* 0x... */"
    static const std::regex instruction(R"(^\s*/\*[0-9a-fA-F]+\*/\s*(?:@!?U?P[0-9T]+\s+)?([A-Z0-9_.]+))");
    KernelAccessWidths widths;
    AccessWidths* current = nullptr;
    std::istringstream lines(sass);
    std::smatch match;
    for (std::string line; std::getline(lines, line);) {
        if (std::regex_search(line, match, function)) {
            current = &widths[kernel_name(demangle(match[1].str()))];
            continue;
        }
        if (current == nullptr || !std::regex_search(line, match, instruction)) {
            continue;
        }
        const std::string opcode = match[1].str();
        // Global loads and stores, and generic ones (LD, ST), which reach global memory through the same path.
        if (opcode_is(opcode, "LDG") || opcode_is(opcode, "LD")) {
            current->widest_load_bytes = std::max(current->widest_load_bytes, access_bytes(opcode));
        } else if (opcode_is(opcode, "STG") || opcode_is(opcode, "ST")) {
            current->widest_store_bytes = std::max(current->widest_store_bytes, access_bytes(opcode));
        }
    }
    return widths;
}

KernelAccessWidths access_widths_of(const std::string& cuobjdump, const fs::path& device_code, double seconds) {
    if (cuobjdump.empty() || device_code.empty()) {
        return {};
    }
    try {
        const ProcessResult dumped =
            run_tool({cuobjdump, "-sass", device_code.string()}, device_code.parent_path(), seconds);
        return dumped.status.success() ? read_access_widths(dumped.output) : KernelAccessWidths{};
    } catch (const std::exception&) {
        return {};
    }
}

}  // namespace cugrade
