// Which course cugrade grades against, found the way users expect: --course, then CUGRADE_COURSE, then a course
// found from the current folder upwards, then the course beside cugrade itself (the checkout it was built in, or
// share/cugrade/course of where it is installed). A course is a folder with exercises/ and rubrics/.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace cugrade {

struct CourseChoice {
    std::filesystem::path root;
    std::string origin;  // "--course", "CUGRADE_COURSE", "found from the current folder", "beside cugrade"
};

bool is_course_folder(const std::filesystem::path& folder);

// `option` is --course (empty when not given), `environment` CUGRADE_COURSE's value (empty when unset), `executable`
// cugrade's own path. Throws UsageError when a named folder is not a course, or when no course is found.
CourseChoice find_course(const std::string& option, const std::string& environment,
                         const std::filesystem::path& current_folder, const std::filesystem::path& executable);

}  // namespace cugrade
