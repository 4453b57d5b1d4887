// A GitHub Classroom clone's time read as data: real clones made by git, loose and packed, a hostile one whose
// configuration makes git run a script, and .git folders that lead elsewhere.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "catch.hpp"
#include "batch/class_layout.hpp"
#include "batch/clone_time.hpp"
#include "base/file_io.hpp"
#include "fresh_folder.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

fs::path fresh(const std::string& name) { return fresh_folder("clone-time", name); }

void shell(const std::string& command) {
    INFO(command);
    REQUIRE(std::system(command.c_str()) == 0);
}

// What `command` printed, less its last newline.
std::string output_of(const std::string& command) {
    std::string output;
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
        output += buffer;
    }
    REQUIRE(::pclose(pipe) == 0);
    if (!output.empty() && output.back() == '\n') {
        output.pop_back();
    }
    return output;
}

std::string git(const fs::path& clone) {
    return "git -C '" + clone.string() + "' -c user.name=t -c user.email=t@x -c commit.gpgSign=false ";
}

// A clone with two commits, the last one's committer time `date`, as GitHub Classroom's clones are made.
void make_clone(const fs::path& clone, const std::string& date) {
    fs::create_directories(clone);
    write_file(clone / "sum.cu", "// first\n");
    shell(git(clone) + "init -q && " + git(clone) + "add sum.cu && " + git(clone) + "commit -q -m first");
    write_file(clone / "sum.cu", "// second\n");
    shell(git(clone) + "add sum.cu && GIT_COMMITTER_DATE='" + date + "' " + git(clone) + "commit -q -m second");
}

std::string git_says(const fs::path& clone) { return output_of(git(clone) + "log -1 --format=%cI"); }

}  // namespace

#if CUGRADE_HAVE_LIBGIT2

TEST_CASE("a clone's time is HEAD's committer time, as git prints it, from loose objects and from packs") {
    const fs::path clone = fresh("benign") / "hw1-alice";
    make_clone(clone, "2026-03-01T23:59:30-05:00");
    CloneTime read = read_clone_time(clone);
    CHECK(read.problem == "");
    REQUIRE(read.time);
    CHECK(*read.time == git_says(clone));
    CHECK(*read.time == "2026-03-01T23:59:30-05:00");

    shell(git(clone) + "gc -q");
    REQUIRE(output_of(git(clone) + "count-objects") == "0 objects, 0 kilobytes");  // every object is in a pack
    read = read_clone_time(clone);
    REQUIRE(read.time);
    CHECK(*read.time == git_says(clone));

    const fs::path utc = fresh("benign") / "hw1-bob";
    make_clone(utc, "2026-02-28T08:00:00+00:00");
    read = read_clone_time(utc);
    REQUIRE(read.time);
    CHECK(*read.time == git_says(utc));
    CHECK(*read.time == "2026-02-28T08:00:00+00:00");
}

TEST_CASE("a clone whose configuration makes git run its script is read without running anything") {
    const fs::path root = fresh("hostile");
    const fs::path clone = root / "hw1-mallory";
    make_clone(clone, "2026-03-01T12:00:00+01:00");
    // A signed commit on HEAD: `git log` shows its signature by running the clone's gpg.program.
    const std::string commit = output_of(git(clone) + "cat-file commit HEAD");
    const std::string header_end = commit.substr(0, commit.find("\n\n") + 1);
    write_file(root / "signed-commit", header_end +
                                           "gpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----\n" +
                                           commit.substr(commit.find("\n\n") + 1));
    const std::string signed_id =
        output_of(git(clone) + "hash-object -t commit -w --literally '" + (root / "signed-commit").string() + "'");
    shell(git(clone) + "update-ref HEAD " + signed_id);
    const fs::path marker = root / "ran";
    write_file(clone / "evil.sh", "#!/bin/sh\ntouch '" + marker.string() + "'\ncat >/dev/null\n");
    fs::permissions(clone / "evil.sh", fs::perms::owner_all);
    shell(git(clone) + "config log.showSignature true && " + git(clone) + "config gpg.program '" +
          (clone / "evil.sh").string() + "' && " + git(clone) + "config core.fsmonitor '" +
          (clone / "evil.sh").string() + "'");

    // git itself runs the student's script: the clone is as hostile as it means to be.
    const std::string git_time = output_of(git(clone) + "log -1 --format=%cI 2>/dev/null | tail -1");
    REQUIRE(fs::exists(marker));
    fs::remove(marker);

    const CloneTime read = read_clone_time(clone);
    REQUIRE(read.time);
    CHECK(*read.time == "2026-03-01T12:00:00+01:00");
    CHECK(*read.time == git_time);
    const ClassLayout layout = read_class_layout(root, {{"sum", "sum.cu"}});
    CHECK(layout.kind == "github-classroom");
    CHECK(layout.warnings.empty());
    CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("a .git that is a link, a gitdir file, a worktree's, or holds a link gives no time and says why") {
    const fs::path root = fresh("elsewhere");
    const fs::path real = root / "hw1-real";
    make_clone(real, "2026-03-01T12:00:00+00:00");

    const fs::path linked = root / "hw1-linked";
    fs::create_directories(linked);
    fs::create_directory_symlink(real / ".git", linked / ".git");
    CHECK(read_clone_time(linked).problem == ".git is a symbolic link (not followed)");
    CHECK_FALSE(read_clone_time(linked).time);

    const fs::path pointed = root / "hw1-pointed";
    fs::create_directories(pointed);
    write_file(pointed / ".git", "gitdir: " + (real / ".git").string() + "\n");
    CHECK(read_clone_time(pointed).problem == ".git is a file (a 'gitdir:' link to another folder, not followed)");

    const fs::path worktree = root / "hw1-worktree";
    fs::create_directories(worktree / ".git");
    write_file(worktree / ".git" / "commondir", (real / ".git").string() + "\n");
    write_file(worktree / ".git" / "HEAD", "ref: refs/heads/master\n");
    CHECK(read_clone_time(worktree).problem == ".git/commondir names another folder (a worktree's .git, not followed)");

    const fs::path planted = root / "hw1-planted";
    make_clone(planted, "2026-03-01T12:00:00+00:00");
    fs::create_symlink("/etc/passwd", planted / ".git/refs/heads/stolen");
    CHECK(read_clone_time(planted).problem ==
          ".git/refs/heads/stolen is a symbolic link (no link under .git is followed)");

    const ClassLayout layout = read_class_layout(root, {{"sum", "sum.cu"}});
    CHECK(layout.kind == "github-classroom");
    CHECK(layout.warnings == std::vector<std::string>{
                                 "hw1-linked: no submission time: .git is a symbolic link (not followed)",
                                 "hw1-planted: no submission time: .git/refs/heads/stolen is a symbolic link (no link "
                                 "under .git is followed)",
                                 "hw1-pointed: no submission time: .git is a file (a 'gitdir:' link to another folder, "
                                 "not followed)",
                                 "hw1-worktree: no submission time: .git/commondir names another folder (a worktree's "
                                 ".git, not followed)"});
    REQUIRE(layout.students.size() == 5);
    CHECK(layout.students[3].id == "real");
    CHECK(layout.students[3].submitted_at == std::optional<std::string>("2026-03-01T12:00:00+00:00"));
}

TEST_CASE("a clone whose commit is elsewhere, none, or malformed gives no time and says why, never a crash") {
    const fs::path root = fresh("malformed");
    const fs::path origin = root / "origin";
    make_clone(origin, "2026-03-01T12:00:00+00:00");
    const fs::path shared = root / "hw1-shared";
    shell("git clone -q --shared '" + origin.string() + "' '" + shared.string() + "'");
    const std::string head = output_of(git(shared) + "rev-parse HEAD").substr(0, 12);
    CHECK(read_clone_time(shared).problem ==
          "HEAD's commit " + head + " is not in .git/objects (objects/info/alternates is not followed)");

    const fs::path empty = root / "hw1-empty";
    fs::create_directories(empty);
    shell(git(empty) + "init -q --initial-branch=master");
    CHECK(read_clone_time(empty).problem == "HEAD names no commit: reference 'refs/heads/master' not found");

    const fs::path tree = root / "hw1-tree";
    make_clone(tree, "2026-03-01T12:00:00+00:00");
    const std::string tree_id = output_of(git(tree) + "rev-parse HEAD^{tree}");
    write_file(tree / ".git/HEAD", tree_id + "\n");  // detached at a tree, which git itself never writes
    CHECK(read_clone_time(tree).problem == "HEAD names tree " + tree_id.substr(0, 12) + ", not a commit");

    const fs::path garbled = root / "hw1-garbled";
    make_clone(garbled, "2026-03-01T12:00:00+00:00");
    write_file(garbled / ".git/HEAD", "ref: refs/heads/\x1b[2J..\n");
    const CloneTime read = read_clone_time(garbled);
    CHECK_FALSE(read.time);
    CHECK(read.problem == "HEAD names no commit: reference 'refs/heads/\xef\xbf\xbd[2J..' not found");
    CHECK(read.problem.find('\x1b') == std::string::npos);

    const fs::path broken = root / "hw1-broken";
    make_clone(broken, "2026-03-01T12:00:00+00:00");
    const std::string id = output_of(git(broken) + "rev-parse HEAD");
    const fs::path object = broken / ".git/objects" / id.substr(0, 2) / id.substr(2);
    fs::permissions(object, fs::perms::owner_read | fs::perms::owner_write);
    write_file(object, "not zlib at all");
    CHECK_FALSE(read_clone_time(broken).time);
    CHECK_FALSE(read_clone_time(broken).problem.empty());
}

#else

TEST_CASE("without libgit2 a clone has no time, and the layout says why once") {
    const fs::path root = fresh("no-libgit2");
    make_clone(root / "hw1-alice", "2026-03-01T12:00:00+00:00");
    make_clone(root / "hw1-bob", "2026-03-01T12:00:00+00:00");
    const ClassLayout layout = read_class_layout(root, {{"sum", "sum.cu"}});
    REQUIRE(layout.students.size() == 2);
    CHECK_FALSE(layout.students[0].submitted_at);
    CHECK(layout.warnings == std::vector<std::string>{"GitHub Classroom clones have no submission time: this cugrade "
                                                      "was built without libgit2 (install libgit2-dev and build it "
                                                      "again)"});
}

#endif
