#include "base/staging.hpp"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <random>
#include <regex>

namespace cugrade {
namespace fs = std::filesystem;
namespace {

constexpr const char* prefix = ".staging-";

}  // namespace

std::string machine_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') {
        return "host";
    }
    std::string text = name;
    std::replace(text.begin(), text.end(), '-', '_');
    return text;
}

bool process_ended(pid_t pid) { return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH; }

std::string staging_name(const std::string& what) {
    std::random_device random;
    return fmt::format("{}{}-{}-{:08x}{:08x}-{}", prefix, machine_name(), ::getpid(), random(), random(), what);
}

bool is_staging_name(const std::string& name) { return name.rfind(prefix, 0) == 0; }

bool staging_abandoned(const fs::path& path) {
    static const std::regex staging(R"(\.staging-([^-]+)-([0-9]+)-.*)");
    const std::string name = path.filename().string();
    std::smatch match;
    std::error_code ec;
    const auto age = fs::file_time_type::clock::now() - fs::last_write_time(path, ec);
    if (!std::regex_match(name, match, staging)) {
        return is_staging_name(name) && !ec && age > std::chrono::hours(24);
    }
    if (match[1] == machine_name()) {
        return process_ended(static_cast<pid_t>(std::stol(match[2])));
    }
    return !ec && age > std::chrono::hours(24);
}

}  // namespace cugrade
