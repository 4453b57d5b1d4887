// A number or a flag as JSON keeps it apart: boolean, signed integer, unsigned integer or float. What the harness's
// CUDA file hands to the host-only objects that write JSON (case_outcome.hpp, capture/call_arguments.hpp).
#pragma once

#include <cstdint>
#include <type_traits>
#include <variant>

namespace cugrade {

using PlainNumber = std::variant<bool, std::int64_t, std::uint64_t, double>;

// clang-format off: 14 joins a requires clause to the declaration after it, 18 keeps it on its own line.
template <class T>
requires std::is_arithmetic_v<T> PlainNumber plain_number(T value) {
    if constexpr (std::is_same_v<T, bool>) {
        return value;
    } else if constexpr (std::is_floating_point_v<T>) {
        return static_cast<double>(value);
    } else if constexpr (std::is_signed_v<T>) {
        return static_cast<std::int64_t>(value);
    } else {
        return static_cast<std::uint64_t>(value);
    }
}
// clang-format on

}  // namespace cugrade
