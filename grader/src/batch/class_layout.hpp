// A class's submissions on disk: which folders are students, what each one's id and submission time are, and which
// file of each exercise was found, or what was found instead.
//   a folder of student folders           alice/sum.cu, bob/sum.cu         id = the folder's name
//   GitHub Classroom clones                hw1-alice/.git, hw1-bob/.git     id = the name after the common prefix,
//                                                                           time = HEAD's commit's (clone_time.hpp)
//   a Gradescope export                    submission_metadata.yml,         id = each submitter's sid (else email),
//                                          submission_123/sum.cu            name, email and time from the metadata
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cugrade {

// Where one exercise's file of one student stands.
struct FoundFile {
    std::string exercise;
    std::filesystem::path path;  // the expected file, present: graded
    // Files that look like it but are not where the grader looks (one folder too deep, another case or extension),
    // relative to the student's folder: reported in the student's row, not graded.
    std::vector<std::string> near_misses;
    bool present = false;
};

struct StudentFolder {
    std::string id;
    std::filesystem::path folder;
    std::optional<std::string> submitted_at;  // as the layout says it (ISO 8601 or Gradescope's form)
    std::string name, email;                  // when the layout says (Gradescope); a roster says otherwise
    std::vector<FoundFile> files;             // one per exercise asked for
};

struct ClassLayout {
    std::string kind;                     // "folders", "github-classroom" or "gradescope"
    std::vector<StudentFolder> students;  // sorted by id
    std::vector<std::string> ignored;     // entries of the top folder that are not student folders, with why
    std::vector<std::string> warnings;    // what was not read of a student's folder, with why (a clone's time)
};

// Reads `root`. `submission_files` are the exercises' file names (exercise name, file name). Throws UsageError when
// `root` is not a folder.
ClassLayout read_class_layout(const std::filesystem::path& root,
                              const std::vector<std::pair<std::string, std::string>>& submission_files);

// Where the class is in a folder an archive unpacked to, `top`: past each folder that is the only entry beside OS
// litter and does not look like a student's (it holds no submission file, is no git clone, and holds folders or a
// submission_metadata.yml). `warnings` say each folder passed and the litter left with it, a lone folder read as a
// student's, and a folder that looks like the class kept by a file beside it. `archive_name` names the archive in
// them; `submission_files` are the course's exercises' file names (exercise name, file name).
struct ClassRoot {
    std::filesystem::path folder;
    std::vector<std::string> warnings;
};
ClassRoot unwrapped_class(const std::filesystem::path& top, const std::string& archive_name,
                          const std::vector<std::pair<std::string, std::string>>& submission_files);

// What operating systems leave in folders and archives: .DS_Store, __MACOSX, Thumbs.db, desktop.ini, ._NAME.
bool is_os_litter(const std::string& name);

// The files of `folder` that look like `expected` without being it: the same name in another case or below a
// subfolder (down to three levels), or the same stem with a source-like extension. Relative paths, sorted.
std::vector<std::string> near_misses(const std::filesystem::path& folder, const std::string& expected);

}  // namespace cugrade
