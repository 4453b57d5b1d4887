#include "course/kit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <utility>

#include "base/error.hpp"
#include "base/file_io.hpp"

namespace cugrade {
namespace fs = std::filesystem;

std::optional<Kit> read_kit(const fs::path& root) {
    const fs::path path = root / kit_manifest_name;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        return std::nullopt;
    }
    try {
        const auto json = nlohmann::json::parse(read_file(path));
        Kit kit;
        kit.cugrade_version = json.at("cugrade").get<std::string>();
        kit.nvcc_version = json.at("nvcc").get<std::string>();
        kit.release = json.at("release").get<std::string>();
        kit.arches = json.at("arches").get<std::vector<std::string>>();
        kit.exercises = json.at("exercises").get<std::vector<std::string>>();
        kit.files = json.at("files").get<std::map<std::string, std::string>>();
        kit.cpu_target = json.value("cpu_target", std::string());
        kit.graded_arch = json.value("arch", std::string());
        return kit;
    } catch (const std::exception& e) {
        throw FileError({path.string(), 0, 0},
                        fmt::format("not a readable kit manifest ({}): unpack the kit again", e.what()));
    }
}

void write_kit(const fs::path& root, const Kit& kit) {
    const nlohmann::json json = {{"cugrade", kit.cugrade_version}, {"nvcc", kit.nvcc_version},
                                 {"release", kit.release},         {"arches", kit.arches},
                                 {"exercises", kit.exercises},     {"cpu_target", kit.cpu_target},
                                 {"arch", kit.graded_arch},        {"files", kit.files}};
    write_file(root / kit_manifest_name, json.dump(2) + "\n");
}

void verify_kit(const fs::path& root, const Kit& kit) {
    std::vector<std::string> changed;
    for (const auto& [file, digest] : kit.files) {
        std::error_code ec;
        if (!fs::is_regular_file(root / file, ec)) {
            changed.push_back(file + " (missing)");
        } else if (file_digest(root / file) != digest) {
            changed.push_back(file);
        }
    }
    if (!changed.empty()) {
        throw UsageError(fmt::format("the kit in '{}' was changed after it was made: {}; these files decide grades, so "
                                     "unpack the kit again (your own work lives outside them)",
                                     root.string(), fmt::join(changed, ", ")));
    }
}

bool release_older(const std::string& have, const std::string& need) {
    const auto parts = [](const std::string& release) {
        int major = 0, minor = 0;
        std::sscanf(release.c_str(), "%d.%d", &major, &minor);
        return std::pair{major, minor};
    };
    return parts(have) < parts(need);
}

void check_kit_toolkit(const Kit& kit, const std::string& nvcc_release, const std::string& nvcc) {
    if (nvcc_release.empty() || !release_older(nvcc_release, kit.release)) {
        return;
    }
    throw UsageError(fmt::format("this kit's harnesses were built with CUDA {} ({}), but {} is CUDA {}, which "
                                 "cannot link them: install CUDA {} or newer, or ask for a kit built with CUDA {}",
                                 kit.release, kit.nvcc_version, nvcc, nvcc_release, kit.release, nvcc_release));
}

}  // namespace cugrade
