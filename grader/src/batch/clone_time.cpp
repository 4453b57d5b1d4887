// A clone's submission time, read as data (clone_time.hpp).
#include "batch/clone_time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "base/text_safety.hpp"

#if CUGRADE_HAVE_LIBGIT2
#include <git2.h>
#include <git2/sys/repository.h>
#endif

namespace cugrade {
namespace fs = std::filesystem;

#if CUGRADE_HAVE_LIBGIT2

namespace {

// A homework's .git holds a few hundred entries; a folder past this many is not read at all.
constexpr std::size_t most_git_entries = 100000;
// A commit object is a few hundred bytes; one past this size is not read.
constexpr std::size_t largest_commit = 1 << 20;

// The problem with `path`, an entry of .git that libgit2 may open, or "": only plain files and folders are read, so
// that no link leads out of the clone and no pipe or device is opened.
std::string entry_problem(const fs::path& path, const fs::path& clone) {
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(path, ec);
    const std::string shown = path.lexically_relative(clone).string();
    if (ec && status.type() != fs::file_type::not_found) {
        return fmt::format("cannot read {}: {}", shown, ec.message());
    }
    if (fs::is_symlink(status)) {
        return fmt::format("{} is a symbolic link (no link under .git is followed)", shown);
    }
    if (fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status)) {
        return fmt::format("{} is not a plain file", shown);
    }
    return "";
}

// The problem with every entry below `folder` (.git/refs, .git/objects), or "".
std::string tree_problem(const fs::path& folder, const fs::path& clone) {
    std::error_code ec;
    fs::recursive_directory_iterator it(folder, ec), end;
    std::size_t entries = 0;
    for (; !ec && it != end; it.increment(ec)) {
        if (++entries > most_git_entries) {
            return fmt::format("more than {} entries under {}", most_git_entries,
                               folder.lexically_relative(clone).string());
        }
        if (std::string problem = entry_problem(it->path(), clone); !problem.empty()) {
            return problem;
        }
    }
    return ec && ec != std::errc::no_such_file_or_directory
               ? fmt::format("cannot read {}: {}", folder.lexically_relative(clone).string(), ec.message())
               : "";
}

// The problem with CLONE/.git's shape, or "": a folder of its own (not a link, not a "gitdir:" file, no commondir
// naming another folder) whose HEAD, packed-refs, refs and objects are plain files and folders.
std::string git_folder_problem(const fs::path& clone) {
    const fs::path git = clone / ".git";
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(git, ec);
    if (fs::is_symlink(status)) {
        return ".git is a symbolic link (not followed)";
    }
    if (fs::is_regular_file(status)) {
        return ".git is a file (a 'gitdir:' link to another folder, not followed)";
    }
    if (!fs::is_directory(status)) {
        return ".git is not a folder";
    }
    if (fs::exists(fs::symlink_status(git / "commondir", ec))) {
        return ".git/commondir names another folder (a worktree's .git, not followed)";
    }
    for (const char* name : {"HEAD", "packed-refs", "refs", "objects"}) {
        if (std::string problem = entry_problem(git / name, clone); !problem.empty()) {
            return problem;
        }
    }
    for (const char* name : {"refs", "objects"}) {
        if (std::string problem = tree_problem(git / name, clone); !problem.empty()) {
            return problem;
        }
    }
    return "";
}

// libgit2's last error, one line of safe text: its messages may quote the clone's own bytes (a ref's name).
std::string libgit2_problem(const std::string& what) {
    const git_error* error = git_error_last();
    std::string message = terminal_text(error != nullptr && error->message != nullptr ? error->message : "unknown");
    std::replace(message.begin(), message.end(), '\n', ' ');
    return fmt::format("{}: {}", what, message);
}

// `git log --format=%cI` of a signature's time: the committer's wall clock and offset. Nothing for a time whose year
// has not four digits, which no late policy reads.
std::optional<std::string> iso_8601(const git_time& when) {
    constexpr std::int64_t ten_thousand_years = 10000LL * 366 * 86400;
    const int minutes = std::abs(when.offset);
    if (std::abs(when.time) > ten_thousand_years || minutes > 99 * 60 + 59) {
        return std::nullopt;
    }
    const std::time_t local = static_cast<std::time_t>(when.time + std::int64_t{when.offset} * 60);
    std::tm parts{};
    if (::gmtime_r(&local, &parts) == nullptr || parts.tm_year + 1900 < 1 || parts.tm_year + 1900 > 9999) {
        return std::nullopt;
    }
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{:02}:{:02}", parts.tm_year + 1900, parts.tm_mon + 1,
                       parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, when.offset < 0 ? '-' : '+',
                       minutes / 60, minutes % 60);
}

struct Library {
    Library() { git_libgit2_init(); }
    ~Library() { git_libgit2_shutdown(); }
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
};

template <class T, void (*Free)(T*)>
struct Freer {
    void operator()(T* object) const { Free(object); }
};
using Repository = std::unique_ptr<git_repository, Freer<git_repository, git_repository_free>>;
using Config = std::unique_ptr<git_config, Freer<git_config, git_config_free>>;
using Odb = std::unique_ptr<git_odb, Freer<git_odb, git_odb_free>>;
using Commit = std::unique_ptr<git_commit, Freer<git_commit, git_commit_free>>;

// An object database of `objects` alone, loose objects and packs: git_odb_open would also follow
// objects/info/alternates to other folders.
Odb own_objects(const fs::path& objects) {
    git_odb* raw = nullptr;
    if (git_odb_new(&raw) != 0) {
        return nullptr;
    }
    Odb odb(raw);
    git_odb_backend* loose = nullptr;
    git_odb_backend* packs = nullptr;
    if (git_odb_backend_loose(&loose, objects.c_str(), -1, 0, 0, 0) != 0 ||
        git_odb_add_backend(odb.get(), loose, 1) != 0) {
        return nullptr;
    }
    if (git_odb_backend_pack(&packs, objects.c_str()) != 0 || git_odb_add_backend(odb.get(), packs, 2) != 0) {
        return nullptr;
    }
    return odb;
}

// .git opened as a bare repository at that path alone (no search upward, no worktree, no "gitdir:" file), with an
// empty configuration in place of the clone's and the machine's, and its own objects alone.
Repository open_clone(const fs::path& git, Odb& odb, std::string& problem) {
    git_repository* raw = nullptr;
    if (git_repository_open_bare(&raw, git.c_str()) != 0) {
        problem = libgit2_problem("cannot open .git");
        return nullptr;
    }
    Repository repo(raw);
    git_config* config = nullptr;
    if (git_config_new(&config) != 0) {
        problem = libgit2_problem("cannot read .git");
        return nullptr;
    }
    const Config empty(config);
    odb = own_objects(git / "objects");
    if (!odb || git_repository_set_config(repo.get(), empty.get()) != 0 ||
        git_repository_set_odb(repo.get(), odb.get()) != 0) {
        problem = libgit2_problem("cannot read .git");
        return nullptr;
    }
    return repo;
}

// The HEAD commit's committer time, or the problem.
CloneTime head_commit_time(const fs::path& clone) {
    const Library library;
    CloneTime result;
    Odb odb;
    const Repository repo = open_clone(clone / ".git", odb, result.problem);
    if (!repo) {
        return result;
    }
    git_oid head{};
    if (const int error = git_reference_name_to_id(&head, repo.get(), "HEAD"); error != 0) {
        result.problem = libgit2_problem(error == GIT_ENOTFOUND || error == GIT_EUNBORNBRANCH ? "HEAD names no commit"
                                                                                              : "cannot read HEAD");
        return result;
    }
    const std::string id = std::string(git_oid_tostr_s(&head)).substr(0, 12);
    std::size_t size = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    if (git_odb_read_header(&size, &type, odb.get(), &head) != 0) {
        std::error_code ec;
        const bool alternates = fs::exists(fs::symlink_status(clone / ".git/objects/info/alternates", ec));
        result.problem = fmt::format("HEAD's commit {} is not in .git/objects{}", id,
                                     alternates ? " (objects/info/alternates is not followed)" : "");
        return result;
    }
    if (type != GIT_OBJECT_COMMIT || size > largest_commit) {
        result.problem = type != GIT_OBJECT_COMMIT
                             ? fmt::format("HEAD names {} {}, not a commit", git_object_type2string(type), id)
                             : fmt::format("HEAD's commit {} is {} bytes, more than a commit has", id, size);
        return result;
    }
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo.get(), &head) != 0) {
        result.problem = libgit2_problem(fmt::format("cannot read HEAD's commit {}", id));
        return result;
    }
    const Commit commit(raw);
    const git_signature* committer = git_commit_committer(commit.get());
    result.time = committer != nullptr ? iso_8601(committer->when) : std::nullopt;
    if (!result.time) {
        result.problem = fmt::format("HEAD's commit {} has no committer time cugrade can read", id);
    }
    return result;
}

}  // namespace

bool can_read_clone_times() { return true; }

CloneTime read_clone_time(const fs::path& clone) {
    try {
        if (std::string problem = git_folder_problem(clone); !problem.empty()) {
            return {std::nullopt, problem};
        }
        return head_commit_time(clone);
    } catch (const std::exception& e) {
        return {std::nullopt, terminal_text(e.what())};
    }
}

#else

bool can_read_clone_times() { return false; }

CloneTime read_clone_time(const fs::path&) { return {}; }

#endif

}  // namespace cugrade
