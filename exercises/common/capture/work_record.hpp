// One description of the work a submission's call asks for, shared by the runner (capture_runtime.cpp writes it)
// and the checker (which replays it). Every item is a JSON object with "op":
//   {"op":"kernel","name":N,"grid":[x,y,z],"block":[x,y,z],"shared_bytes":S,"arguments":[HEX...],"cooperative":B}
//       N is the kernel's device (mangled) name; each argument is its bytes, in hexadecimal, in declaration order.
//   {"op":"memset","address":A,"value":V,"pitch":P,"width":W,"height":H}      (height 1 and pitch W for 1-D)
//   {"op":"copy","to":A,"from":B,"to_pitch":P,"from_pitch":Q,"width":W,"height":H}   device to device
//   {"op":"upload","to":A,"data":HEX}                                         host bytes to device memory
//   {"op":"symbol_upload","symbol":N,"offset":O,"data":HEX}                   into a __constant__/__device__ symbol
//   {"op":"function_attribute","name":N,"attribute":K,"value":V}              cudaFuncSetAttribute
// A refused call is {"call":C,"why":W}. Addresses are the numbers the checker gave the runner; the checker replays
// only work whose addresses lie inside the buffers of the case.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cugrade::work_record {

// The most bytes one call may upload from the host: room for a table of coefficients, not for an answer.
inline constexpr std::size_t max_upload_bytes = 64 * 1024;

inline std::string to_hex(const void* data, std::size_t size) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    text.reserve(2 * size);
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
        text += digits[bytes[i] >> 4];
        text += digits[bytes[i] & 15];
    }
    return text;
}

inline std::vector<unsigned char> from_hex(const std::string& text) {
    if (text.size() % 2 != 0) {
        throw std::invalid_argument("odd number of hexadecimal digits");
    }
    const auto value = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        throw std::invalid_argument(std::string("not a hexadecimal digit: '") + c + "'");
    };
    std::vector<unsigned char> bytes(text.size() / 2);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        bytes[i] = static_cast<unsigned char>(value(text[2 * i]) << 4 | value(text[2 * i + 1]));
    }
    return bytes;
}

}  // namespace cugrade::work_record
