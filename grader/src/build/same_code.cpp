#include "build/same_code.hpp"

#include "build/course_tools.hpp"

namespace cugrade {
namespace fs = std::filesystem;

bool write_code_without_comments(const fs::path& dir, const std::string& source, const std::string& written,
                                 double seconds, const SandboxPolicy& sandbox,
                                 std::vector<std::pair<std::string, std::string>> environment) {
    // -dD keeps each #define as written; the line marker it starts with names `source` as given, the same for all.
    const ProcessResult preprocessed =
        run_tool({"g++", "-fpreprocessed", "-dD", "-E", "-x", "c++", "-std=c++20", source, "-o", written}, dir, seconds,
                 sandbox, std::move(environment));
    if (!preprocessed.status.success() || !fs::exists(dir / written)) {
        fs::remove(dir / written);
        return false;
    }
    return true;
}

}  // namespace cugrade
