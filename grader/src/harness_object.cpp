#include "harness_object.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "course_tools.hpp"

namespace cugrade {
namespace fs = std::filesystem;

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

    auto reference = compile;
    reference.insert(reference.end(), {"-c", recipe.reference_source.string(), "-o", "reference.o"});
    run_course_tool(reference, dir,
                    fmt::format("the reference '{}' failed to compile:", exercise.reference_source.string()));
    std::vector<std::string> rename = {toolchain.objcopy};
    for (const auto& entry_point : exercise.entry_points) {
        rename.push_back(fmt::format("--redefine-sym={}={}{}", entry_point, reference_prefix, entry_point));
    }
    rename.push_back("reference.o");
    run_course_tool(rename, dir, "objcopy failed on the reference:");

    auto harness = compile;
    harness.insert(harness.end(), {"-c", exercise.harness_source.string(), "-o", "harness_main.o"});
    run_course_tool(harness, dir, fmt::format("the harness '{}' failed to compile:", exercise.harness_source.string()));
    auto replayer = compile;
    replayer.insert(replayer.end(), {"-c", (common / "capture" / "replay.cpp").string(), "-o", "replay.o"});
    run_course_tool(replayer, dir, "the replayer failed to compile:");
    auto profiler = compile;
    profiler.insert(profiler.end(), {"-c", (common / "counter_profile.cpp").string(), "-o", "counter_profile.o"});
    run_course_tool(profiler, dir, "the counter profiler failed to compile:");
    run_course_tool({toolchain.ld, "-r", "harness_main.o", "reference.o", "replay.o", "counter_profile.o", "-o",
                     "harness.o"},
                    dir, "combining the harness with the reference failed:");
    for (const char* file : {"reference.o", "harness_main.o", "replay.o", "counter_profile.o"}) {
        fs::remove(dir / file);
    }
}

}  // namespace cugrade
