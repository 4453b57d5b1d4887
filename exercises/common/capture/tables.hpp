// What the checker tells the runner before the first call, in one JSON line: each kernel's parameter sizes and
// attributes, and the device's properties and attributes, for the capture runtime's answers. Both sides are built by
// the same toolkit, so the runtime's structures travel as their bytes.
#pragma once

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "capture_runtime.hpp"
#include "work_record.hpp"

namespace cugrade::capture {

template <class T>
std::string struct_to_hex(const T& value) {
    return work_record::to_hex(&value, sizeof value);
}

template <class T>
T struct_from_hex(const std::string& text) {
    const auto bytes = work_record::from_hex(text);
    if (bytes.size() != sizeof(T)) {
        throw std::invalid_argument("a structure of the wrong size (another CUDA version?)");
    }
    T value;
    std::memcpy(&value, bytes.data(), sizeof value);
    return value;
}

inline nlohmann::json tables_to_json(const std::map<std::string, KernelInfo>& kernels, const DeviceInfo& device) {
    nlohmann::json table = {{"kernels", nlohmann::json::object()}, {"device", nlohmann::json::object()}};
    for (const auto& [name, info] : kernels) {
        table["kernels"][name] = {{"parameter_sizes", info.parameter_sizes},
                                  {"attributes", struct_to_hex(info.attributes)}};
    }
    table["device"]["properties"] = struct_to_hex(device.properties);
    for (const auto& [attribute, value] : device.attributes) {
        table["device"]["attributes"][std::to_string(attribute)] = value;
    }
    return table;
}

inline void tables_from_json(const nlohmann::json& table, std::map<std::string, KernelInfo>& kernels,
                             DeviceInfo& device) {
    for (const auto& [name, info] : table.at("kernels").items()) {
        kernels[name] = {info.at("parameter_sizes").get<std::vector<std::size_t>>(),
                         struct_from_hex<cudaFuncAttributes>(info.at("attributes").get<std::string>())};
    }
    device.properties = struct_from_hex<cudaDeviceProp>(table.at("device").at("properties").get<std::string>());
    if (table.at("device").contains("attributes")) {
        for (const auto& [attribute, value] : table.at("device").at("attributes").items()) {
            device.attributes[std::stoi(attribute)] = value.get<int>();
        }
    }
}

}  // namespace cugrade::capture
