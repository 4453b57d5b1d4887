#include "base/symbols.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <regex>
#include <sstream>

namespace cugrade {

std::string demangle(const std::string& name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                std::free);
    return status == 0 && text ? std::string(text.get()) : name;
}

std::string short_name(const std::string& demangled) {
    std::string name = std::regex_replace(demangled, std::regex(R"(::[A-Z]+_[0-9]+_SM_[0-9_]+(NS)?::)"), "::");
    const auto cut = name.find_first_of("<(");
    return cut == std::string::npos ? name : name.substr(0, cut);
}

std::string readable_name(const std::string& name) {
    return name.rfind("_Z", 0) == 0 ? short_name(demangle(name)) : name;
}

std::vector<Symbol> parse_nm(const std::string& output) {
    std::vector<Symbol> symbols;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        // "0000000000000082 T sum" or "                 U cudaLaunchKernel"
        std::istringstream fields(line);
        std::vector<std::string> parts;
        for (std::string part; fields >> part;) {
            parts.push_back(part);
        }
        if (parts.size() < 2 || parts[parts.size() - 2].size() != 1) {
            continue;
        }
        std::string name = parts.back();
        name = name.substr(0, name.find('@'));  // "malloc@GLIBC_2.2.5"
        symbols.push_back({name, parts[parts.size() - 2][0]});
    }
    return symbols;
}

}  // namespace cugrade
