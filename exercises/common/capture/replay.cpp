// Replaying recorded work (replay.hpp).
#include "replay.hpp"

#include <string>

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

std::string Replayer::refusal(const nlohmann::json& work, const std::vector<DeviceRange>& ranges) const {
    try {
        for (const auto& item : work) {
            const std::string op = item.at("op").get<std::string>();
            if (op == "kernel") {
                const std::string name = item.at("name").get<std::string>();
                const auto info = kernels_.find(name);
                if (info == kernels_.end()) {
                    return "launches " + name + ", which is not one of its kernels";
                }
                const auto& arguments = item.at("arguments");
                if (arguments.size() != info->second.parameter_sizes.size()) {
                    return "launches " + name + " with " + std::to_string(arguments.size()) + " arguments, not " +
                           std::to_string(info->second.parameter_sizes.size());
                }
                for (std::size_t i = 0; i < arguments.size(); ++i) {
                    if (arguments[i].get<std::string>().size() != 2 * info->second.parameter_sizes[i]) {
                        return "launches " + name + " with argument " + std::to_string(i + 1) + " of the wrong size";
                    }
                }
            } else if (op == "memset") {
                const auto span = pitched_span(item.at("pitch"), item.at("width"), item.at("height"));
                if (span != 0 && !inside(item.at("address"), span, true, ranges)) {
                    return "sets memory outside the output and scratch buffers it is given";
                }
            } else if (op == "copy") {
                const std::uint64_t width = item.at("width"), height = item.at("height");
                const auto to_span = pitched_span(item.at("to_pitch"), width, height);
                const auto from_span = pitched_span(item.at("from_pitch"), width, height);
                if (to_span != 0 && !inside(item.at("to"), to_span, true, ranges)) {
                    return "copies to memory outside the output and scratch buffers it is given";
                }
                if (from_span != 0 && !inside(item.at("from"), from_span, false, ranges)) {
                    return "copies from memory outside the buffers it is given";
                }
            } else if (op == "upload") {
                const std::uint64_t bytes = item.at("data").get<std::string>().size() / 2;
                if (bytes > work_record::max_upload_bytes) {
                    return "uploads more than " + std::to_string(work_record::max_upload_bytes) + " bytes";
                }
                if (bytes != 0 && !inside(item.at("to"), bytes, true, ranges)) {
                    return "uploads to memory outside the output and scratch buffers it is given";
                }
            } else if (op == "symbol_upload") {
                CUdeviceptr address = 0;
                std::size_t size = 0;
                const std::string symbol = item.at("symbol").get<std::string>();
                if (module_ == nullptr || cuModuleGetGlobal(&address, &size, module_, symbol.c_str()) != CUDA_SUCCESS) {
                    return "copies to " + symbol + ", which is not one of its symbols";
                }
                const std::uint64_t offset = item.at("offset"), bytes = item.at("data").get<std::string>().size() / 2;
                if (offset > size || bytes > size - offset || bytes > work_record::max_upload_bytes) {
                    return "copies past the end of " + symbol;
                }
            } else if (op == "function_attribute") {
                const int attribute = item.at("attribute");
                if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
                    attribute != CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
                    return "sets kernel attribute " + std::to_string(attribute) + ", which the grader does not replay";
                }
                if (!functions_.contains(item.at("name").get<std::string>())) {
                    return "sets an attribute of something that is not one of its kernels";
                }
            } else {
                return "asks for work the grader does not know (" + op + ")";
            }
        }
    } catch (const nlohmann::json::exception& e) {
        return std::string("sent work the grader cannot read: ") + e.what();
    } catch (const std::invalid_argument& e) {
        return std::string("sent work the grader cannot read: ") + e.what();
    }
    return "";
}

void Replayer::replay(const nlohmann::json& work, CUstream stream) {
    uploads_.clear();
    for (const auto& item : work) {
        const std::string op = item.at("op").get<std::string>();
        if (op == "kernel") {
            const std::string name = item.at("name").get<std::string>();
            std::vector<std::vector<unsigned char>> bytes;
            for (const auto& argument : item.at("arguments")) {
                bytes.push_back(work_record::from_hex(argument.get<std::string>()));
            }
            std::vector<void*> parameters;
            for (auto& argument : bytes) {
                parameters.push_back(argument.data());
            }
            const auto& grid = item.at("grid");
            const auto& block = item.at("block");
            const unsigned shared_bytes = item.at("shared_bytes").get<unsigned>();
            const CUfunction function = functions_.at(name);
            check(item.value("cooperative", false)
                      ? cuLaunchCooperativeKernel(function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                                  shared_bytes, stream, parameters.data())
                      : cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                       shared_bytes, stream, parameters.data(), nullptr),
                  "launching " + name);
        } else if (op == "memset") {
            check(cuMemsetD2D8Async(item.at("address").get<CUdeviceptr>(), item.at("pitch"),
                                    item.at("value").get<unsigned char>(), item.at("width"), item.at("height"),
                                    stream),
                  "memset");
        } else if (op == "copy") {
            CUDA_MEMCPY2D copy{};
            copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
            copy.srcDevice = item.at("from").get<CUdeviceptr>();
            copy.srcPitch = item.at("from_pitch");
            copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            copy.dstDevice = item.at("to").get<CUdeviceptr>();
            copy.dstPitch = item.at("to_pitch");
            copy.WidthInBytes = item.at("width");
            copy.Height = item.at("height");
            check(cuMemcpy2DAsync(&copy, stream), "copy");
        } else if (op == "upload") {
            uploads_.push_back(work_record::from_hex(item.at("data").get<std::string>()));
            check(cuMemcpyHtoDAsync(item.at("to").get<CUdeviceptr>(), uploads_.back().data(), uploads_.back().size(),
                                    stream),
                  "upload");
        } else if (op == "symbol_upload") {
            CUdeviceptr address = 0;
            std::size_t size = 0;
            check(cuModuleGetGlobal(&address, &size, module_, item.at("symbol").get<std::string>().c_str()),
                  "cuModuleGetGlobal");
            uploads_.push_back(work_record::from_hex(item.at("data").get<std::string>()));
            check(cuMemcpyHtoDAsync(address + item.at("offset").get<std::size_t>(), uploads_.back().data(),
                                    uploads_.back().size(), stream),
                  "symbol upload");
        } else if (op == "function_attribute") {
            check(cuFuncSetAttribute(functions_.at(item.at("name").get<std::string>()),
                                     static_cast<CUfunction_attribute>(item.at("attribute").get<int>()),
                                     item.at("value")),
                  "cuFuncSetAttribute");
        }
    }
}

}  // namespace cugrade::replay
