#include "course/course_locator.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace cugrade {
namespace fs = std::filesystem;

bool is_course_folder(const fs::path& folder) {
    std::error_code ec;
    return fs::is_directory(folder / "exercises", ec) && fs::is_directory(folder / "rubrics", ec);
}

CourseChoice find_course(const std::string& option, const std::string& environment, const fs::path& current_folder,
                         const fs::path& executable) {
    const auto named = [](const std::string& folder, const std::string& origin) {
        if (!is_course_folder(folder)) {
            throw UsageError(fmt::format("{} '{}' is not a course: it needs exercises/ and rubrics/", origin, folder));
        }
        return CourseChoice{fs::absolute(folder).lexically_normal(), origin};
    };
    if (!option.empty()) {
        return named(option, "--course");
    }
    if (!environment.empty()) {
        return named(environment, "CUGRADE_COURSE");
    }
    std::error_code ec;
    for (fs::path folder = fs::absolute(current_folder, ec); !folder.empty(); folder = folder.parent_path()) {
        if (is_course_folder(folder)) {
            return {folder.lexically_normal(), "found from the current folder"};
        }
        if (folder == folder.parent_path()) {
            break;
        }
    }
    // build/grader/cugrade in a checkout; PREFIX/bin/cugrade beside PREFIX/share/cugrade/course when installed.
    const fs::path bin = fs::weakly_canonical(executable, ec).parent_path();
    for (const fs::path& folder :
         {bin.parent_path().parent_path(), bin.parent_path() / "share" / "cugrade" / "course"}) {
        if (is_course_folder(folder)) {
            return {folder.lexically_normal(), "beside cugrade"};
        }
    }
    throw UsageError("no course found: give --course DIR, set CUGRADE_COURSE, or run cugrade inside a course folder "
                     "(one with exercises/ and rubrics/)");
}

}  // namespace cugrade
