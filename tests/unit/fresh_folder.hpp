// An empty folder for one test, under the system's temporary folder: each test file has its own suite name, so
// tests running at once never share one.
#pragma once

#include <filesystem>
#include <string>

inline std::filesystem::path fresh_folder(const std::string& suite, const std::string& name) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("cugrade-test-" + suite) / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}
