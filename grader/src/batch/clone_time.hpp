// A GitHub Classroom clone's submission time: the committer time of the commit its HEAD names, read as data with
// libgit2 from CLONE/.git alone. No git program runs, and nothing of the clone's configuration is read: a student's
// .git/config may name programs (gpg.program, core.fsmonitor, hooks), and none of them may run outside the sandbox
// (docs/security.md, "The instructor's side").
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace cugrade {

struct CloneTime {
    // ISO 8601 with the committer's offset, as `git log -1 --format=%cI` prints it: 2026-03-01T12:00:00-05:00.
    std::optional<std::string> time;
    std::string problem;  // why there is no time, one line ("" when there is one, or without libgit2)
};

// Whether this cugrade was built with libgit2; without it, no clone has a time.
bool can_read_clone_times();

// Reads the time of `clone`'s HEAD commit. Never throws: a .git that is a link, a "gitdir:" file, a worktree's, holds
// links, pipes or devices, or is malformed in any way gives no time and the problem. Objects come from .git/objects
// alone: objects/info/alternates, which names folders elsewhere, is not followed.
CloneTime read_clone_time(const std::filesystem::path& clone);

}  // namespace cugrade
