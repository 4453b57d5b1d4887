#include "inspect/shared_memory_use.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "inspect/sass_listing.hpp"

namespace cugrade {

namespace {

bool may_reach_shared_memory(const std::string& opcode) {
    // Shared memory's own instructions; the asynchronous copies into it (LDGSTS, the bulk and tensor-memory copies)
    // and the barriers they arrive on; the warpgroup and tensor-core matrix instructions that read their operands
    // from it; and the generic accesses, which reach it with a shared address.
    static constexpr std::array<std::string_view, 12> exact = {"LDS", "STS", "LDSM", "STSM", "ATOMS", "LDGSTS",
                                                               "LD",  "ST",  "ATOM", "RED",  "SYNCS", "ARRIVES"};
    static constexpr std::array<std::string_view, 3> families = {"UBLK", "UTMA", "UTC"};
    const std::string base = opcode.substr(0, opcode.find('.'));
    if (std::any_of(exact.begin(), exact.end(), [&](std::string_view name) { return base == name; })) {
        return true;
    }
    if (std::any_of(families.begin(), families.end(),
                    [&](std::string_view family) { return base.rfind(family, 0) == 0; })) {
        return true;
    }
    return base.size() > 4 && base.compare(base.size() - 4, 4, "GMMA") == 0;  // HGMMA, IGMMA, QGMMA, BGMMA
}

}  // namespace

bool sass_may_touch_shared_memory(const std::string& listing) {
    const std::vector<SassFunction> functions = read_sass(listing);
    if (functions.empty()) {
        return true;  // no machine code to read
    }
    return std::any_of(functions.begin(), functions.end(), [](const SassFunction& function) {
        return std::any_of(function.opcodes.begin(), function.opcodes.end(), may_reach_shared_memory);
    });
}

bool may_touch_shared_memory(const std::optional<std::string>& listing) {
    return !listing || sass_may_touch_shared_memory(*listing);
}

}  // namespace cugrade
