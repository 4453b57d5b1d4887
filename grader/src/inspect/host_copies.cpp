#include "inspect/host_copies.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace cugrade {
namespace {

// The copy kind that reads device memory on the host. An upload (cudaMemcpyHostToDevice) carries only what the host
// already has, which is never the exercise's input, and a small table is legitimate (a kernel's constants); a copy of
// cudaMemcpyDefault is a copy between the buffers the submission is given, and the replay refuses one that leaves
// them. Neither is refused here.
const std::vector<std::string>& kinds_that_read_device_memory() {
    static const std::vector<std::string> kinds = {"cudaMemcpyDeviceToHost"};
    return kinds;
}

// The copy functions the API policy allows (api_policy.cpp) through which a kind above reaches the runtime.
const std::vector<std::string>& copy_functions() {
    static const std::vector<std::string> calls = {"cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpy2D",
                                                   "cudaMemcpy2DAsync"};
    return calls;
}

// Functions the API policy allows whose only work is to copy device memory to the host. cudaMemcpyToSymbol (and its
// Async) stays: it writes a __constant__ or __device__ symbol of the submission's own from the host, a kernel's
// constants, and reads no device memory. Other host copies (cudaMemcpyFromArray, cudaMemcpy3D, ...) are outside the
// API policy's allowlist and refused there.
const std::vector<std::string>& host_read_functions() {
    static const std::vector<std::string> calls = {"cudaMemcpyFromSymbol", "cudaMemcpyFromSymbolAsync"};
    return calls;
}

bool calls_any(const ObjectFile& object, const std::vector<std::string>& names) {
    return std::any_of(object.symbols.begin(), object.symbols.end(), [&](const ObjectSymbol& symbol) {
        return !symbol.defined() && std::find(names.begin(), names.end(), symbol.name) != names.end();
    });
}

Finding host_copy(const ContractRules& contract, const std::string& where, const std::string& name) {
    return {"host-copy", name,
            fmt::format("{}: copies to the host ({}), which this exercise forbids (\"{}\"): compute on the GPU and "
                        "leave the results in the buffers you are given",
                        where, name, contract.host_copies_words)};
}

}  // namespace

std::vector<Finding> host_copy_findings(const ContractRules& contract, const ObjectFile& object,
                                        const FirstUse& first_use, const std::string& file) {
    std::vector<Finding> findings;
    if (!contract.host_copies_refused) {
        return findings;
    }
    // A kind counts where the object makes a copy: text in a branch the preprocessor dropped is not a call.
    if (calls_any(object, copy_functions())) {
        for (const auto& kind : kinds_that_read_device_memory()) {
            if (const std::string where = first_use(kind); !where.empty()) {
                findings.push_back(host_copy(contract, where, kind));
            }
        }
    }
    for (const auto& call : host_read_functions()) {
        if (calls_any(object, {call})) {
            const std::string where = first_use(call);
            findings.push_back(host_copy(contract, where.empty() ? file : where, call + "()"));
        }
    }
    return findings;
}

}  // namespace cugrade
