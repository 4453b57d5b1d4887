#include "build/object_file.hpp"

#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sandbox/process.hpp"

namespace cugrade {
namespace {

std::string readelf(const Toolchain& toolchain, const char* option, const std::filesystem::path& path) {
    ProcessOptions options;
    options.argv = {toolchain.readelf, option, "-W", path.string()};
    options.output_limit = std::size_t{256} << 20;
    const ProcessResult result = run_process(options, std::chrono::seconds(60));
    if (!result.status.success()) {
        throw std::runtime_error(fmt::format("readelf {} failed on '{}' ({}):\n{}", option, path.string(),
                                             result.status.describe(), result.output));
    }
    return result.output;
}

}  // namespace

ObjectFile read_object(const std::filesystem::path& path, const Toolchain& toolchain) {
    ObjectFile object;

    // "  [ 1] .group            GROUP           0000000000000000 000040 000008 04     36  38  4"
    static const std::regex section_line(
        R"(^\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+[0-9a-fA-F]+\s+[0-9a-fA-F]+\s+([0-9a-fA-F]+)\s)");
    std::istringstream sections(readelf(toolchain, "-S", path));
    for (std::string line; std::getline(sections, line);) {
        std::smatch m;
        if (std::regex_search(line, m, section_line) && m[1] != "0") {
            object.sections.push_back(
                {static_cast<unsigned>(std::stoul(m[1])), m[2], m[3], std::stoull(m[4], nullptr, 16), false});
        }
    }

    // "COMDAT group section [    1] `.group' [SIGNATURE] contains 2 sections:" then "   [   12]   NAME" lines.
    std::set<std::string> comdat_sections;
    static const std::regex member_line(R"(^\s*\[\s*(\d+)\]\s+\S)");
    std::istringstream groups(readelf(toolchain, "-g", path));
    bool in_comdat = false;
    for (std::string line; std::getline(groups, line);) {
        if (line.rfind("COMDAT group section", 0) == 0) {
            in_comdat = true;
        } else if (line.find("group section") != std::string::npos) {
            in_comdat = false;
        } else if (std::smatch m; in_comdat && std::regex_search(line, m, member_line)) {
            comdat_sections.insert(m[1]);
        }
    }
    for (auto& section : object.sections) {
        section.comdat = comdat_sections.count(std::to_string(section.index)) != 0;
    }

    // "    12: 0000000000000010   979 FUNC    LOCAL  DEFAULT    6 _ZSt16__introsort_loop..."
    static const std::regex symbol_line(
        R"(^\s*\d+:\s+[0-9a-fA-F]+\s+\S+\s+(\S+)\s+(\S+)\s+(\S+)\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s*$)");
    std::istringstream symbols(readelf(toolchain, "-s", path));
    bool in_symtab = false;
    for (std::string line; std::getline(symbols, line);) {
        if (line.rfind("Symbol table", 0) == 0) {
            in_symtab = line.find("'.symtab'") != std::string::npos;
            continue;
        }
        std::smatch m;
        if (!in_symtab || !std::regex_match(line, m, symbol_line)) {
            continue;
        }
        ObjectSymbol symbol{m[5], m[1], m[2], m[3], m[4], false};
        symbol.comdat = comdat_sections.count(symbol.section) != 0;
        object.symbols.push_back(std::move(symbol));
    }
    return object;
}

}  // namespace cugrade
