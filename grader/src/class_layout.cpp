// Reading a class's submissions (class_layout.hpp).
#include "class_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include <yaml-cpp/yaml.h>

#include "clone_time.hpp"
#include "cugrade/error.hpp"
#include "cugrade/submission.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

// A folder name usable as an id in file names and CSV cells: no hidden folders, nothing a shell or a path would
// read differently, no first character a spreadsheet takes for a formula.
bool usable_id(const std::string& name) {
    if (name.empty() || name.size() > 128 || !(std::isalnum(static_cast<unsigned char>(name.front())) || name.front() == '_')) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '@' || c == '+';
    });
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
        return names.size() == 1 && names[0].find('-') != std::string::npos ? names[0].substr(0, names[0].rfind('-') + 1)
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

// Gradescope's "Export Submissions": submission_metadata.yml maps each submission's folder to its submitters
// (:name, :sid, :email) and its time (:created_at). A group submission gives each submitter a row.
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
        const std::string folder_name = submission.first.as<std::string>("");
        const fs::path folder = root / folder_name;
        std::error_code ec;
        if (!usable_id(folder_name) || fs::is_symlink(folder, ec) || !fs::is_directory(folder, ec)) {
            layout.ignored.push_back(fmt::format("{}: named in submission_metadata.yml, but not a folder of the export",
                                                 folder_name));
            continue;
        }
        const YAML::Node record = submission.second;
        const std::string created = record[":created_at"] ? record[":created_at"].as<std::string>("") : "";
        const YAML::Node submitters = record[":submitters"];
        if (!submitters || !submitters.IsSequence() || submitters.size() == 0) {
            layout.ignored.push_back(fmt::format("{}: no submitters in submission_metadata.yml", folder_name));
            continue;
        }
        for (const auto& submitter : submitters) {
            StudentFolder student;
            student.folder = folder;
            student.name = submitter[":name"] ? submitter[":name"].as<std::string>("") : "";
            student.email = submitter[":email"] ? submitter[":email"].as<std::string>("") : "";
            const std::string sid = submitter[":sid"] ? submitter[":sid"].as<std::string>("") : "";
            student.id = !sid.empty() ? sid : student.email;
            if (!usable_id(student.id) || !seen.insert(student.id).second) {
                layout.ignored.push_back(fmt::format("{}: submitter '{}' has no usable id, or one already taken",
                                                     folder_name, student.id));
                continue;
            }
            if (!created.empty()) {
                student.submitted_at = created;
            }
            student.files = find_files(folder, files);
            layout.students.push_back(std::move(student));
        }
    }
}

}  // namespace

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
                layout.ignored.push_back(
                    fmt::format("{}: not usable as a student id (letters, digits and - _ . @ +, starting with a letter, digit or _)", name));
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
                layout.ignored.push_back(fmt::format("{}: the assignment's name without a user", folder.filename().string()));
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
