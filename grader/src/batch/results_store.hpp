// RESULTS/students/ID/: each student's results, written whole or not at all. A student's files are written to a
// staging folder beside the others, which then takes the student's folder's place in one rename (an exchange when
// it exists), so a reader, or a batch resumed after cugrade was killed at any moment, sees the old results or the
// new ones, never half of either. key.txt says what they were graded from; a batch grades a student again only
// when that key changed.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cugrade {

class ResultsStore {
public:
    // Creates RESULTS/students/ when needed and removes the staging folders of a batch that was killed.
    explicit ResultsStore(const std::filesystem::path& results_dir);

    const std::filesystem::path& students_dir() const { return students_; }

    // The key the student's results were graded from, or nothing when there are none.
    std::optional<std::string> key(const std::string& id) const;

    // Replaces the student's folder with `files` (names to contents) and key.txt holding `key`, last.
    void write(const std::string& id, const std::string& key, const std::map<std::string, std::string>& files) const;

    // Every student with results, sorted.
    std::vector<std::string> ids() const;

private:
    std::filesystem::path students_;
};

// Writes `text` to `path` through a new file beside it and a rename: readers never see half of it.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace cugrade
