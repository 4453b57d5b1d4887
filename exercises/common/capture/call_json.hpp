// A call's arguments as JSON (call_arguments.hpp), and the lines that carry them between the checker and the runner:
// what the GPU's runner (runner.hpp) and the CPU self-check's (cpu/runner.hpp) read and write alike.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "call_arguments.hpp"

namespace cugrade::runner {

inline nlohmann::json argument_json(const CallArgument& argument) {
    return std::visit([](auto value) { return nlohmann::json(value); }, argument);
}

template <class T>
T decode_argument(const nlohmann::json& value) {
    if constexpr (std::is_same_v<T, cudaStream_t>) {
        return nullptr;
    } else if constexpr (std::is_pointer_v<T>) {
        return reinterpret_cast<T>(static_cast<std::uintptr_t>(value.get<std::uint64_t>()));
    } else {
        return value.get<T>();
    }
}

inline nlohmann::json arguments_json(const CallArguments& arguments) {
    nlohmann::json array = nlohmann::json::array();
    for (const CallArgument& argument : arguments) {
        array.push_back(argument_json(argument));
    }
    return array;
}

template <class... Args>
nlohmann::json encode_arguments(Args... arguments) {
    return arguments_json(call_arguments(arguments...));
}

template <class... Args, std::size_t... Index>
std::tuple<Args...> decode_arguments(const nlohmann::json& arguments, std::index_sequence<Index...>) {
    if (arguments.size() != sizeof...(Args)) {
        throw std::invalid_argument("expected " + std::to_string(sizeof...(Args)) + " arguments, got " +
                                    std::to_string(arguments.size()));
    }
    return {decode_argument<Args>(arguments[Index])...};
}

// Reads one line from `in`; false at the end of input. A line longer than `max_bytes` throws std::length_error.
inline bool read_line(std::FILE* in, std::string& line, std::size_t max_bytes = SIZE_MAX) {
    line.clear();
    for (int c; (c = std::fgetc(in)) != EOF;) {
        if (c == '\n') {
            return true;
        }
        if (line.size() == max_bytes) {
            throw std::length_error("a line longer than " + std::to_string(max_bytes) + " bytes");
        }
        line += static_cast<char>(c);
    }
    return !line.empty();
}

}  // namespace cugrade::runner
