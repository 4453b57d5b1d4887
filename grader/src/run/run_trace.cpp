#include "run/run_trace.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace cugrade {

RunTrace::RunTrace(const std::filesystem::path& file) : file_(std::fopen(file.c_str(), "a")) {
    if (file_ == nullptr) {
        throw std::runtime_error(fmt::format("cannot write the trace '{}': {}", file.string(), std::strerror(errno)));
    }
}

RunTrace::~RunTrace() { std::fclose(file_); }

void RunTrace::record(nlohmann::json record) {
    record["at"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
    const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::lock_guard lock(mutex_);
    std::fputs(line.c_str(), file_);
    std::fflush(file_);
}

}  // namespace cugrade
