// A student kit (`cugrade handout`): a course without its reference solutions or hidden cases, whose harnesses come
// prebuilt. Its kit.json names the toolkit that built them and the digests of every file that decides a grade.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cugrade {

inline constexpr const char* kit_manifest_name = "kit.json";

struct Kit {
    std::string cugrade_version;      // of the cugrade that made it
    std::string nvcc_version;         // the last line of the instructor's `nvcc --version`
    std::string release;              // that toolkit's release, "13.0"
    std::vector<std::string> arches;  // SASS in every harness object, "sm_75" ...; PTX of the last one
    std::vector<std::string> exercises;
    // The machine its CPU self-check objects were built for (cpu_target(), "x86_64-linux"); empty: the kit has none.
    std::string cpu_target;
    // The architecture of the GPUs the course grades on (course.yaml's `arch`), which a machine without a GPU compiles
    // submissions for; empty: fallback_arch.
    std::string graded_arch;
    std::map<std::string, std::string> files;  // path relative to the kit -> file_digest(); what grading reads
};

// The kit at `root`, or nothing when `root` holds no kit.json. Throws FileError when kit.json cannot be read.
std::optional<Kit> read_kit(const std::filesystem::path& root);

void write_kit(const std::filesystem::path& root, const Kit& kit);

// Throws UsageError naming each file of the manifest that is missing or was changed after the kit was made.
void verify_kit(const std::filesystem::path& root, const Kit& kit);

// Throws UsageError when `nvcc_release` is older than the toolkit that built the kit: naming both, and what to do.
void check_kit_toolkit(const Kit& kit, const std::string& nvcc_release, const std::string& nvcc);

// Whether toolkit release `have` ("12.4") is older than `need` ("13.0"), comparing major, then minor.
bool release_older(const std::string& have, const std::string& need);

}  // namespace cugrade
