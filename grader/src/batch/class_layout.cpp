// Reading a class's submissions (class_layout.hpp).
#include "batch/class_layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>

#include <yaml-cpp/yaml.h>

#include "batch/clone_time.hpp"
#include "base/error.hpp"
#include "course/submission.hpp"
#include "batch/student_id.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

// A clone's submission time, or none with the reason in `warnings` (and, without libgit2, the reason once).
std::optional<std::string> clone_time(const fs::path& clone, std::vector<std::string>& warnings) {
    if (!can_read_clone_times()) {
        const std::string warning = "GitHub Classroom clones have no submission time: this cugrade was built without "
                                    "libgit2 (install libgit2-dev and build it again)";
        if (std::find(warnings.begin(), warnings.end(), warning) == warnings.end()) {
            warnings.push_back(warning);
        }
        return std::nullopt;
    }
    CloneTime read = read_clone_time(clone);
    if (!read.time) {
        warnings.push_back(fmt::format("{}: no submission time: {}", clone.filename().string(), read.problem));
    }
    return read.time;
}

// The longest prefix ending in '-' that every name shares, or "" (GitHub Classroom names clones ASSIGNMENT-USER).
std::string common_dash_prefix(const std::vector<std::string>& names) {
    if (names.size() < 2) {
        return names.size() == 1 && names[0].find('-') != std::string::npos
                   ? names[0].substr(0, names[0].rfind('-') + 1)
                   : "";
    }
    std::string prefix = names.front();
    for (const auto& name : names) {
        std::size_t same = 0;
        while (same < prefix.size() && same < name.size() && prefix[same] == name[same]) {
            ++same;
        }
        prefix.resize(same);
    }
    const auto dash = prefix.rfind('-');
    return dash == std::string::npos ? "" : prefix.substr(0, dash + 1);
}

std::vector<FoundFile> find_files(const fs::path& folder,
                                  const std::vector<std::pair<std::string, std::string>>& submission_files) {
    std::vector<FoundFile> files;
    for (const auto& [exercise, file] : submission_files) {
        FoundFile found;
        found.exercise = exercise;
        found.path = folder / file;
        found.present = submission_present(folder, file);  // a link too: read_submission judges it
        found.near_misses = near_misses(folder, file);
        files.push_back(std::move(found));
    }
    return files;
}

// A record of submission_metadata.yml that cannot be read, where: its submission (or one submitter) is skipped.
struct MalformedRecord {
    YAML::Mark mark;
    std::string why;
};

// A field's text, "" when it is absent or empty; a list or a map throws MalformedRecord.
std::string scalar_field(const YAML::Node& map, const char* key, const std::string& malformed) {
    const YAML::Node field = map[key];
    if (!field || field.IsNull()) {
        return "";
    }
    if (!field.IsScalar()) {
        throw MalformedRecord{field.Mark(), malformed};
    }
    return field.Scalar();
}

// One submitter of a record, or MalformedRecord.
StudentFolder read_submitter(const YAML::Node& submitter) {
    if (!submitter.IsMap()) {
        throw MalformedRecord{submitter.Mark(),
                              "a submitter is not a map of :name, :sid and :email; that submitter is not graded"};
    }
    StudentFolder student;
    const auto field = [&](const char* key) {
        return scalar_field(submitter, key,
                            fmt::format("a submitter's {} is not text; that submitter is not graded", key));
    };
    student.name = field(":name");
    student.email = field(":email");
    const std::string sid = field(":sid");
    student.id = !sid.empty() ? sid : student.email;
    return student;
}

// "FOLDER: FILE:LINE: why", as layout.ignored words it.
std::string malformed_words(const std::string& folder_name, const fs::path& file, const YAML::Mark& mark,
                            const std::string& why) {
    return fmt::format("{}: {}:{}: {}", folder_name, file.string(), mark.is_null() ? 0 : mark.line + 1, why);
}

// One submission of a Gradescope export: its record's submitters, each a student graded from its folder.
void read_submission_record(const YAML::Node& record, const std::string& folder_name, const fs::path& root,
                            const std::vector<std::pair<std::string, std::string>>& files, ClassLayout& layout,
                            std::set<std::string>& seen) {
    const fs::path metadata_file = root / "submission_metadata.yml";
    if (!record.IsMap()) {
        throw MalformedRecord{record.Mark(),
                              "the record is not a map of :submitters and :created_at; its submitters are not graded"};
    }
    const std::string created = scalar_field(record, ":created_at",
                                             "its :created_at is not a time; its submitters "
                                             "are not graded");
    const YAML::Node submitters = record[":submitters"];
    if (submitters && !submitters.IsNull() && !submitters.IsSequence()) {
        throw MalformedRecord{submitters.Mark(), "its :submitters is not a list; its submitters are not graded"};
    }
    if (!submitters || submitters.IsNull() || submitters.size() == 0) {
        layout.ignored.push_back(fmt::format("{}: no submitters in submission_metadata.yml", folder_name));
        return;
    }
    for (const auto& submitter : submitters) {
        StudentFolder student;
        try {
            student = read_submitter(submitter);
        } catch (const MalformedRecord& e) {
            layout.ignored.push_back(malformed_words(folder_name, metadata_file, e.mark, e.why));
            continue;
        } catch (const YAML::Exception& e) {
            layout.ignored.push_back(
                malformed_words(folder_name, metadata_file, e.mark, e.msg + "; that submitter is not graded"));
            continue;
        }
        if (!usable_id(student.id) || !seen.insert(student.id).second) {
            layout.ignored.push_back(
                fmt::format("{}: submitter '{}' has no usable id, or one already taken", folder_name, student.id));
            continue;
        }
        student.folder = root / folder_name;
        if (!created.empty()) {
            student.submitted_at = created;
        }
        student.files = find_files(student.folder, files);
        layout.students.push_back(std::move(student));
    }
}

// Gradescope's "Export Submissions": submission_metadata.yml maps each submission's folder to its submitters
// (:name, :sid, :email) and its time (:created_at). A group submission gives each submitter a row. A record that
// cannot be read is skipped and said; the others are graded.
void read_gradescope_export(const fs::path& root, const std::vector<std::pair<std::string, std::string>>& files,
                            ClassLayout& layout) {
    const fs::path metadata_file = root / "submission_metadata.yml";
    YAML::Node metadata;
    try {
        metadata = YAML::LoadFile(metadata_file.string());
    } catch (const YAML::Exception& e) {
        throw UsageError(fmt::format("{}:{}: {}", metadata_file.string(), e.mark.line + 1, e.msg));
    }
    if (!metadata.IsMap()) {
        throw UsageError(fmt::format("{}: not Gradescope's submission metadata (a map of submission folders)",
                                     metadata_file.string()));
    }
    std::set<std::string> seen;
    for (const auto& submission : metadata) {
        if (!submission.first.IsScalar()) {
            layout.ignored.push_back(fmt::format("{}:{}: a submission whose folder is not a name; not graded",
                                                 metadata_file.string(), submission.first.Mark().line + 1));
            continue;
        }
        const std::string folder_name = submission.first.Scalar();
        const fs::path folder = root / folder_name;
        std::error_code ec;
        if (!usable_id(folder_name) || fs::is_symlink(folder, ec) || !fs::is_directory(folder, ec)) {
            layout.ignored.push_back(
                fmt::format("{}: named in submission_metadata.yml, but not a folder of the export", folder_name));
            continue;
        }
        // Where a record's own node has no place (an empty value), its key's is said.
        const auto place = [&](const YAML::Mark& mark) { return mark.is_null() ? submission.first.Mark() : mark; };
        try {
            read_submission_record(submission.second, folder_name, root, files, layout, seen);
        } catch (const MalformedRecord& e) {
            layout.ignored.push_back(malformed_words(folder_name, metadata_file, place(e.mark), e.why));
        } catch (const YAML::Exception& e) {
            layout.ignored.push_back(
                malformed_words(folder_name, metadata_file, place(e.mark), e.msg + "; its submitters are not graded"));
        }
    }
}

// A folder's entries: OS litter apart.
struct FolderEntries {
    std::vector<fs::path> others, litter;
};

FolderEntries entries_of(const fs::path& folder) {
    FolderEntries entries;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
        (is_os_litter(entry.path().filename().string()) ? entries.litter : entries.others).push_back(entry.path());
    }
    std::sort(entries.others.begin(), entries.others.end());
    std::sort(entries.litter.begin(), entries.litter.end());
    return entries;
}

bool real_folder(const fs::path& path) {
    std::error_code ec;
    return fs::is_directory(fs::symlink_status(path, ec));
}

// Why the lone folder `folder` is a student's, in words ("it holds sum.cu"), or "" when it may wrap the class.
std::string student_sign(const fs::path& folder, const std::vector<std::pair<std::string, std::string>>& files) {
    std::error_code ec;
    for (const auto& [exercise, file] : files) {
        if (fs::exists(fs::symlink_status(folder / file, ec))) {
            return fmt::format("it holds {}", file);
        }
    }
    if (fs::exists(fs::symlink_status(folder / ".git", ec))) {
        return "it is a git clone";
    }
    if (fs::is_regular_file(folder / "submission_metadata.yml", ec)) {
        return "";
    }
    const FolderEntries entries = entries_of(folder);
    const bool holds_folders = std::any_of(entries.others.begin(), entries.others.end(), [](const fs::path& entry) {
        return entry.filename().string().front() != '.' && real_folder(entry);
    });
    return holds_folders ? "" : "it holds no folder";
}

// "'a', 'b'": paths relative to `top`, each quoted.
std::string quoted_relative(const std::vector<fs::path>& paths, const fs::path& top) {
    std::vector<std::string> words;
    for (const auto& path : paths) {
        words.push_back(fmt::format("'{}'", path.lexically_relative(top).string()));
    }
    return fmt::format("{}", fmt::join(words, ", "));
}

// The warning for a folder among `others` that looks like it holds the class, kept from being unwrapped by the
// files beside it; "" when there is no such folder.
std::string kept_wrapped(const fs::path& top, const std::vector<fs::path>& others, const std::string& archive_name,
                         const std::vector<std::pair<std::string, std::string>>& files) {
    std::vector<fs::path> folders, beside;
    for (const auto& entry : others) {
        (real_folder(entry) ? folders : beside).push_back(entry);
    }
    if (folders.size() != 1 || beside.empty() || !student_sign(folders[0], files).empty()) {
        return "";
    }
    const std::string name = folders[0].lexically_relative(top).string();
    return fmt::format("unpacked '{}': not unwrapped: {} beside its folder '{}/', so '{}' is read as a student's "
                       "folder; if '{}/' holds the class, grade '{}' instead",
                       archive_name, quoted_relative(beside, top), name, folders[0].filename().string(), name,
                       folders[0].string());
}

}  // namespace

bool is_os_litter(const std::string& name) {
    return name == ".DS_Store" || name == "__MACOSX" || name == "Thumbs.db" || name == "desktop.ini" ||
           name.starts_with("._");
}

ClassRoot unwrapped_class(const fs::path& top, const std::string& archive_name,
                          const std::vector<std::pair<std::string, std::string>>& submission_files) {
    ClassRoot root{top, {}};
    std::vector<fs::path> litter;
    std::error_code ec;
    while (!fs::exists(root.folder / "submission_metadata.yml", ec)) {
        FolderEntries entries = entries_of(root.folder);
        if (entries.others.size() != 1 || !real_folder(entries.others[0])) {
            if (std::string kept = kept_wrapped(top, entries.others, archive_name, submission_files); !kept.empty()) {
                root.warnings.push_back(std::move(kept));
            }
            break;
        }
        const fs::path& only = entries.others[0];
        if (const std::string sign = student_sign(only, submission_files); !sign.empty()) {
            root.warnings.push_back(fmt::format("unpacked '{}': its only folder '{}/' is read as a student's folder: "
                                                "{}",
                                                archive_name, only.lexically_relative(top).string(), sign));
            break;
        }
        litter.insert(litter.end(), entries.litter.begin(), entries.litter.end());
        root.folder = only;
    }
    if (root.folder != top) {
        const std::string ignored = litter.empty() ? "" : fmt::format("; {} ignored", quoted_relative(litter, top));
        root.warnings.insert(root.warnings.begin(),
                             fmt::format("unpacked '{}': its folder '{}/' holds the class{}", archive_name,
                                         root.folder.lexically_relative(top).string(), ignored));
    }
    return root;
}

std::vector<std::string> near_misses(const fs::path& folder, const std::string& expected) {
    static const std::set<std::string> source_like = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".txt", ""};
    const std::string wanted = lowercase(expected);
    const std::string wanted_stem = lowercase(fs::path(expected).stem().string());
    std::vector<std::string> found;
    std::error_code ec;
    fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
    std::size_t visited = 0;
    for (; !ec && it != end && visited < 10000; it.increment(ec), ++visited) {
        const fs::path relative = it->path().lexically_relative(folder);
        const std::string name = it->path().filename().string();
        if (it->is_directory(ec)) {
            // Three levels are enough to find alice/hw1/src/sum.cu; version control folders are not submissions.
            if (it.depth() >= 2 || name == ".git" || name == "__MACOSX") {
                it.disable_recursion_pending();
            }
            continue;
        }
        if (relative == fs::path(expected)) {
            continue;  // the file itself
        }
        const std::string lower = lowercase(name);
        const bool same_name = lower == wanted;
        const bool same_stem = lowercase(it->path().stem().string()) == wanted_stem &&
                               source_like.count(lowercase(it->path().extension().string())) != 0;
        if (same_name || same_stem) {
            found.push_back(relative.string());
        }
    }
    std::sort(found.begin(), found.end());
    return found;
}

ClassLayout read_class_layout(const fs::path& root,
                              const std::vector<std::pair<std::string, std::string>>& submission_files) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
        throw UsageError(fmt::format("'{}' is not a folder; give the folder that holds one folder per student, or an "
                                     "archive of it (.zip, .tar.gz)",
                                     root.string()));
    }
    ClassLayout layout;
    if (fs::is_regular_file(root / "submission_metadata.yml", ec)) {
        layout.kind = "gradescope";
        read_gradescope_export(root, submission_files, layout);
        std::sort(layout.students.begin(), layout.students.end(),
                  [](const StudentFolder& a, const StudentFolder& b) { return a.id < b.id; });
        return layout;
    }
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_symlink(ec)) {
            layout.ignored.push_back(fmt::format("{}: a symbolic link, not a student's folder", name));
        } else if (!entry.is_directory(ec)) {
            if (name.front() != '.') {
                layout.ignored.push_back(fmt::format("{}: a file, not a student's folder", name));
            }
        } else if (!usable_id(name)) {
            if (name.front() != '.') {
                layout.ignored.push_back(fmt::format("{}: not usable as a student id ({})", name, usable_id_rule));
            }
        } else {
            folders.push_back(entry.path());
        }
    }
    if (ec) {
        throw UsageError(fmt::format("cannot read '{}': {}", root.string(), ec.message()));
    }
    std::sort(folders.begin(), folders.end());

    std::vector<std::string> names;
    bool all_clones = !folders.empty();
    for (const auto& folder : folders) {
        names.push_back(folder.filename().string());
        all_clones = all_clones && fs::exists(fs::symlink_status(folder / ".git", ec));  // a link too: warned of
    }
    const std::string prefix = all_clones ? common_dash_prefix(names) : "";
    layout.kind = all_clones && !prefix.empty() ? "github-classroom" : "folders";

    for (const auto& folder : folders) {
        StudentFolder student;
        student.folder = folder;
        student.id = folder.filename().string();
        if (layout.kind == "github-classroom") {
            student.id = student.id.substr(prefix.size());
            if (student.id.empty()) {
                layout.ignored.push_back(
                    fmt::format("{}: the assignment's name without a user", folder.filename().string()));
                continue;
            }
            student.submitted_at = clone_time(folder, layout.warnings);
        }
        student.files = find_files(folder, submission_files);
        layout.students.push_back(std::move(student));
    }
    std::sort(layout.students.begin(), layout.students.end(),
              [](const StudentFolder& a, const StudentFolder& b) { return a.id < b.id; });
    return layout;
}

}  // namespace cugrade
