// Replaying recorded work (replay.hpp).
#include "replay.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "host_rules.hpp"
#include "work_record.hpp"

namespace cugrade::replay {
namespace {

void check(CUresult code, const std::string& what) {
    if (code != CUDA_SUCCESS) {
        const char* name = nullptr;
        cuGetErrorName(code, &name);
        throw ReplayFailure(code, what + ": " + (name != nullptr ? name : "unknown CUDA error"));
    }
}

int function_attribute(CUfunction function, CUfunction_attribute attribute) {
    int value = 0;
    check(cuFuncGetAttribute(&value, attribute, function), "cuFuncGetAttribute");
    return value;
}

capture::KernelInfo describe(CUfunction function) {
    // Under lazy loading (CUDA's default) a kernel's attributes exist only once it is loaded.
    check(cuFuncLoad(function), "loading a kernel of the submission");
    capture::KernelInfo info;
    for (std::size_t index = 0;; ++index) {
        std::size_t offset = 0, size = 0;
        if (cuFuncGetParamInfo(function, index, &offset, &size) != CUDA_SUCCESS) {
            break;
        }
        info.parameter_sizes.push_back(size);
    }
    cudaFuncAttributes& a = info.attributes;
    a.sharedSizeBytes = static_cast<std::size_t>(function_attribute(function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
    a.constSizeBytes = static_cast<std::size_t>(function_attribute(function, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
    a.localSizeBytes = static_cast<std::size_t>(function_attribute(function, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
    a.maxThreadsPerBlock = function_attribute(function, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    a.numRegs = function_attribute(function, CU_FUNC_ATTRIBUTE_NUM_REGS);
    a.ptxVersion = function_attribute(function, CU_FUNC_ATTRIBUTE_PTX_VERSION);
    a.binaryVersion = function_attribute(function, CU_FUNC_ATTRIBUTE_BINARY_VERSION);
    a.cacheModeCA = function_attribute(function, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA);
    a.maxDynamicSharedSizeBytes = function_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
    a.preferredShmemCarveout = function_attribute(function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
    return info;
}

// [address, address + span) inside one of the ranges (a writable one when `write`).
bool inside(std::uint64_t address, std::uint64_t span, bool write, const std::vector<DeviceRange>& ranges) {
    for (const DeviceRange& range : ranges) {
        if (address >= range.begin && span <= range.bytes && address - range.begin <= range.bytes - span &&
            (range.writable || !write)) {
            return true;
        }
    }
    return false;
}

// The bytes a pitched block touches, from its first byte: pitch * (height - 1) + width, or 0 when it overflows.
std::uint64_t pitched_span(std::uint64_t pitch, std::uint64_t width, std::uint64_t height) {
    if (height == 0 || width == 0) {
        return 0;
    }
    if (width > pitch && height > 1) {
        return 0;
    }
    const unsigned __int128 span = static_cast<unsigned __int128>(pitch) * (height - 1) + width;
    return span > UINT64_MAX ? 0 : static_cast<std::uint64_t>(span);
}

}  // namespace

Replayer::Replayer(const void* image) {
    if (image == nullptr) {
        return;  // a submission without device code: any kernel it launches is unknown
    }
    check(cuModuleLoadData(&module_, image), "loading the submission's device code");
    unsigned count = 0;
    check(cuModuleGetFunctionCount(&count, module_), "cuModuleGetFunctionCount");
    if (count == 0) {
        return;
    }
    std::vector<CUfunction> functions(count);
    check(cuModuleEnumerateFunctions(functions.data(), count, module_), "cuModuleEnumerateFunctions");
    for (CUfunction function : functions) {
        const char* name = nullptr;
        check(cuFuncGetName(&name, function), "cuFuncGetName");
        functions_[name] = function;
        kernels_[name] = describe(function);
    }
}

Replayer::~Replayer() {
    if (module_ != nullptr) {
        cuModuleUnload(module_);
    }
}

Work Replayer::prepare(const nlohmann::json& work, const std::vector<DeviceRange>& ranges) const {
    Work prepared;
    try {
        for (const auto& item : work) {
            Work::Item& out = prepared.items_.emplace_back();
            const std::string op = item.at("op").get<std::string>();
            if (op == "kernel") {
                out.op = Work::Op::kernel;
                out.name = item.at("name").get<std::string>();
                const auto info = kernels_.find(out.name);
                if (info == kernels_.end()) {
                    throw Refused("launches " + out.name + ", which is not one of its kernels");
                }
                out.function = functions_.at(out.name);
                const auto& arguments = item.at("arguments");
                const auto& sizes = info->second.parameter_sizes;
                if (arguments.size() != sizes.size()) {
                    throw Refused("launches " + out.name + " with " + std::to_string(arguments.size()) +
                                  " arguments, not " + std::to_string(sizes.size()));
                }
                for (std::size_t i = 0; i < arguments.size(); ++i) {
                    out.arguments.push_back(work_record::from_hex(arguments[i].get<std::string>()));
                    if (out.arguments.back().size() != sizes[i]) {
                        throw Refused("launches " + out.name + " with argument " + std::to_string(i + 1) +
                                      " of the wrong size");
                    }
                }
                for (auto& argument : out.arguments) {
                    out.parameters.push_back(argument.data());
                }
                for (int d = 0; d < 3; ++d) {
                    out.grid[d] = item.at("grid").at(d).get<unsigned>();
                    out.block[d] = item.at("block").at(d).get<unsigned>();
                }
                out.shared_bytes = item.at("shared_bytes").get<unsigned>();
                out.cooperative = item.value("cooperative", false);
            } else if (op == "memset") {
                out.op = Work::Op::memset;
                out.address = item.at("address").get<CUdeviceptr>();
                out.pitch = item.at("pitch").get<std::size_t>();
                out.width = item.at("width").get<std::size_t>();
                out.height = item.at("height").get<std::size_t>();
                out.value = item.at("value").get<unsigned char>();
                const auto span = pitched_span(out.pitch, out.width, out.height);
                if (span != 0 && !inside(out.address, span, true, ranges)) {
                    throw Refused("sets memory outside the output and scratch buffers it is given");
                }
            } else if (op == "copy") {
                out.op = Work::Op::copy;
                CUDA_MEMCPY2D& copy = out.copy;
                copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
                copy.srcDevice = item.at("from").get<CUdeviceptr>();
                copy.srcPitch = item.at("from_pitch").get<std::size_t>();
                copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
                copy.dstDevice = item.at("to").get<CUdeviceptr>();
                copy.dstPitch = item.at("to_pitch").get<std::size_t>();
                copy.WidthInBytes = item.at("width").get<std::size_t>();
                copy.Height = item.at("height").get<std::size_t>();
                const auto to_span = pitched_span(copy.dstPitch, copy.WidthInBytes, copy.Height);
                const auto from_span = pitched_span(copy.srcPitch, copy.WidthInBytes, copy.Height);
                if (to_span != 0 && !inside(copy.dstDevice, to_span, true, ranges)) {
                    throw Refused(host_rules::copy_outside_to);
                }
                if (from_span != 0 && !inside(copy.srcDevice, from_span, false, ranges)) {
                    throw Refused(host_rules::copy_outside_from);
                }
            } else if (op == "upload" || op == "symbol_upload") {
                out.op = Work::Op::upload;
                out.data = work_record::from_hex(item.at("data").get<std::string>());
                if (out.data.size() > work_record::max_upload_bytes) {
                    throw Refused("uploads more than " + std::to_string(work_record::max_upload_bytes) + " bytes");
                }
                if (op == "upload") {
                    out.address = item.at("to").get<CUdeviceptr>();
                    if (!out.data.empty() && !inside(out.address, out.data.size(), true, ranges)) {
                        throw Refused("uploads to memory outside the output and scratch buffers it is given");
                    }
                } else {
                    CUdeviceptr symbol_address = 0;
                    std::size_t size = 0;
                    const std::string symbol = item.at("symbol").get<std::string>();
                    if (module_ == nullptr ||
                        cuModuleGetGlobal(&symbol_address, &size, module_, symbol.c_str()) != CUDA_SUCCESS) {
                        throw Refused("copies to " + symbol + ", which is not one of its symbols");
                    }
                    const std::uint64_t offset = item.at("offset").get<std::uint64_t>();
                    if (offset > size || out.data.size() > size - offset) {
                        throw Refused("copies past the end of " + symbol);
                    }
                    out.address = symbol_address + offset;
                }
            } else if (op == "function_attribute") {
                out.op = Work::Op::function_attribute;
                const int attribute = item.at("attribute").get<int>();
                if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
                    attribute != CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
                    throw Refused("sets kernel attribute " + std::to_string(attribute) +
                                  ", which the grader does not replay");
                }
                out.name = item.at("name").get<std::string>();
                const auto function = functions_.find(out.name);
                if (function == functions_.end()) {
                    throw Refused("sets an attribute of something that is not one of its kernels");
                }
                out.function = function->second;
                out.attribute = static_cast<CUfunction_attribute>(attribute);
                out.attribute_value = item.at("value").get<int>();
            } else {
                throw Refused("asks for work the grader does not know (" + op + ")");
            }
        }
    } catch (const nlohmann::json::exception& e) {
        throw Refused(std::string("sent work the grader cannot read: ") + e.what());
    } catch (const std::invalid_argument& e) {
        throw Refused(std::string("sent work the grader cannot read: ") + e.what());
    }
    return prepared;
}

std::vector<LaunchShape> Work::kernel_launches() const {
    std::vector<LaunchShape> launches;
    for (const Item& item : items_) {
        if (item.op == Op::kernel) {
            LaunchShape launch{item.name, item.function};
            std::copy(std::begin(item.grid), std::end(item.grid), launch.grid);
            std::copy(std::begin(item.block), std::end(item.block), launch.block);
            launch.shared_bytes = item.shared_bytes;
            launches.push_back(std::move(launch));
        }
    }
    return launches;
}

void Replayer::replay(const Work& work, CUstream stream) {
    for (const Work::Item& item : work.items_) {
        switch (item.op) {
            case Work::Op::kernel: {
                void** parameters = const_cast<void**>(item.parameters.data());
                const CUresult launched =
                    item.cooperative
                        ? cuLaunchCooperativeKernel(item.function, item.grid[0], item.grid[1], item.grid[2],
                                                    item.block[0], item.block[1], item.block[2], item.shared_bytes,
                                                    stream, parameters)
                        : cuLaunchKernel(item.function, item.grid[0], item.grid[1], item.grid[2], item.block[0],
                                         item.block[1], item.block[2], item.shared_bytes, stream, parameters, nullptr);
                if (launched != CUDA_SUCCESS) {  // the message is built only then: replays run inside timing brackets
                    check(launched, "launching " + item.name);
                }
                break;
            }
            case Work::Op::memset:
                check(cuMemsetD2D8Async(item.address, item.pitch, item.value, item.width, item.height, stream),
                      "memset");
                break;
            case Work::Op::copy: check(cuMemcpy2DAsync(&item.copy, stream), "copy"); break;
            case Work::Op::upload:
                // From pageable memory the driver has taken the bytes when the call returns.
                check(cuMemcpyHtoDAsync(item.address, item.data.data(), item.data.size(), stream), "upload");
                break;
            case Work::Op::function_attribute:
                check(cuFuncSetAttribute(item.function, item.attribute, item.attribute_value), "cuFuncSetAttribute");
                break;
        }
    }
}

}  // namespace cugrade::replay
