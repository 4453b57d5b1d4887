#include "inspect/sass_listing.hpp"

#include <regex>
#include <sstream>

#include "build/course_tools.hpp"

namespace cugrade {
namespace fs = std::filesystem;

std::vector<SassFunction> read_sass(const std::string& listing) {
    // "        Function : _Z6add_2dPKfS0_mmPf"
    static const std::regex function(R"(^\s*Function\s*:\s*(\S+)\s*$)");
    // "        /*00f0*/   @!P0 LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;   /* 0x... */"
    static const std::regex instruction(R"(^\s*/\*[0-9a-fA-F]+\*/\s*(?:@!?U?P[0-9T]+\s+)?([A-Z0-9_.]+))");
    std::vector<SassFunction> functions;
    std::istringstream lines(listing);
    std::smatch match;
    for (std::string line; std::getline(lines, line);) {
        if (std::regex_search(line, match, function)) {
            functions.push_back({match[1].str(), {}});
        } else if (!functions.empty() && std::regex_search(line, match, instruction)) {
            functions.back().opcodes.push_back(match[1].str());
        }
    }
    return functions;
}

bool opcode_is(const std::string& opcode, const std::string& name) {
    return opcode == name || opcode.rfind(name + ".", 0) == 0;
}

std::optional<std::string> sass_listing_of(const std::string& cuobjdump, const fs::path& device_code, double seconds) {
    if (cuobjdump.empty() || device_code.empty()) {
        return std::nullopt;
    }
    try {
        const ProcessResult dumped =
            run_tool({cuobjdump, "-sass", device_code.string()}, device_code.parent_path(), seconds);
        if (!dumped.status.success()) {
            return std::nullopt;
        }
        return dumped.output;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace cugrade
