// A call's arguments as the checker sends them to the runner (runner.hpp): a pointer as its address, a number as
// itself, the stream as nothing (the checker replays on its own). Plain C++: the exercise's CUDA translation unit
// makes them, and runner.hpp writes and reads their JSON.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <variant>
#include <vector>

#include "../plain_number.hpp"

namespace cugrade::runner {

using CallArgument = std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, double>;
using CallArguments = std::vector<CallArgument>;

template <class T>
CallArgument call_argument(T value) {
    if constexpr (std::is_same_v<T, cudaStream_t>) {
        return nullptr;
    } else if constexpr (std::is_pointer_v<T>) {
        return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(value));
    } else {
        static_assert(std::is_arithmetic_v<T>, "an entry point's arguments are pointers, numbers and the stream");
        return std::visit([](auto number) -> CallArgument { return number; }, plain_number(value));
    }
}

template <class... Args>
CallArguments call_arguments(Args... arguments) {
    return {call_argument(arguments)...};
}

}  // namespace cugrade::runner
