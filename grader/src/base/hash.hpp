// A stable 64-bit hash (FNV-1a): the same on every platform and standard library, unlike std::hash. It names cache
// entries and derives case seeds; nothing relies on it to resist a deliberate collision (the cache compares the
// full key, see build.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace cugrade {

constexpr std::uint64_t fnv1a64(std::string_view text, std::uint64_t hash = 0xcbf29ce484222325ull) {
    for (const char c : text) {
        hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    }
    return hash;
}

inline std::string hex64(std::uint64_t value) { return fmt::format("{:016x}", value); }

}  // namespace cugrade
