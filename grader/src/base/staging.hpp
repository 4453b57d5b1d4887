// What is being written beside its final place, in a folder that several cugrade processes, on several machines of a
// cluster, may share (the build cache, RESULTS/): names unique across them, and the rule for what a writer that is
// gone left behind.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace cugrade {

// This machine's name as staging names and locks carry it ('-' made '_': staging names are split at '-').
std::string machine_name();

// Whether the process `pid` of this machine has ended (never true of this process).
bool process_ended(pid_t pid);

// ".staging-HOST-PID-RANDOM-what": unique across the machines sharing the folder, and findable when abandoned.
std::string staging_name(const std::string& what);

bool is_staging_name(const std::string& name);

// Whether a staging file or folder was left by a writer that is gone: one of this machine whose process has ended,
// or one of another machine untouched for a day (its process cannot be asked).
bool staging_abandoned(const std::filesystem::path& path);

}  // namespace cugrade
