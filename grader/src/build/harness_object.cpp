#include "build/harness_object.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <vector>

#include "build/course_tools.hpp"

namespace cugrade {
namespace fs = std::filesystem;

namespace {

// The harness's host-only parts in exercises/common, each NAME.cpp.
constexpr const char* host_parts[] = {"plan_loop", "case_record", "channel", "remote_submission"};

}  // namespace

std::vector<std::string> course_compile_command(const Exercise& exercise, const Toolchain& toolchain,
                                                const std::vector<std::string>& arch_flags) {
    std::vector<std::string> compile = {toolchain.nvcc};
    for (const auto& flag : nvcc_common_flags()) {
        compile.push_back(flag);
    }
    compile.insert(compile.end(), arch_flags.begin(), arch_flags.end());
    for (const auto& include : {exercise.directory, exercise.common_dir()}) {
        compile.push_back("-I" + include.string());
    }
    for (const auto& include : toolchain.include_dirs) {
        compile.push_back("-I" + include.string());
    }
    return compile;
}

void compile_harness_object(const Exercise& exercise, const Toolchain& toolchain, const HarnessRecipe& recipe,
                            const fs::path& dir) {
    const fs::path common = exercise.common_dir();
    auto compile = course_compile_command(exercise, toolchain, recipe.arch_flags);
    if (!recipe.line_info) {
        compile.erase(std::remove(compile.begin(), compile.end(), "-lineinfo"), compile.end());
    }

    // The objects compile side by side (the harness's is most of the time): a cold course's first grading waits on
    // the slowest alone. The harness's JSON is in host-only objects of its own (exercises/common/harness.cuh says
    // why), which compile beside it.
    const auto compiled = [&](const fs::path& source, const char* object, std::string failure) {
        return compile_course_file(compile, source, object, dir, std::move(failure));
    };
    std::vector<std::future<void>> objects;
    objects.push_back(
        compiled(recipe.reference_source, "reference.o",
                 fmt::format("the reference '{}' failed to compile:", exercise.reference_source.string())));
    objects.push_back(compiled(exercise.harness_source, "harness_main.o",
                               fmt::format("the harness '{}' failed to compile:", exercise.harness_source.string())));
    objects.push_back(compiled(common / "capture" / "replay.cpp", "replay.o", "the replayer failed to compile:"));
    objects.push_back(
        compiled(common / "counter_profile.cpp", "counter_profile.o", "the counter profiler failed to compile:"));
    for (const char* part : host_parts) {
        objects.push_back(compiled(common / (std::string(part) + ".cpp"), (std::string(part) + ".o").c_str(),
                                   fmt::format("the harness's {}.cpp failed to compile:", part)));
    }
    // The first failure in this order is reported; the futures of the others wait for their compiles as they go.
    for (auto& object : objects) {
        object.get();
    }
    std::vector<std::string> rename = {toolchain.objcopy};
    for (const auto& entry_point : exercise.entry_points) {
        rename.push_back(fmt::format("--redefine-sym={}={}{}", entry_point, reference_prefix, entry_point));
    }
    rename.push_back("reference.o");
    run_course_tool(rename, dir, "objcopy failed on the reference:");
    std::vector<std::string> parts = {"harness_main.o", "reference.o", "replay.o", "counter_profile.o"};
    for (const char* part : host_parts) {
        parts.push_back(std::string(part) + ".o");
    }
    std::vector<std::string> combine = {toolchain.ld, "-r"};
    combine.insert(combine.end(), parts.begin(), parts.end());
    combine.insert(combine.end(), {"-o", "harness.o"});
    run_course_tool(combine, dir, "combining the harness with the reference failed:");
    for (const std::string& part : parts) {
        fs::remove(dir / part);
    }
}

}  // namespace cugrade
