// Errors a user can meet. Lower layers throw these with a finished message; one catch in main() prints
// `cugrade: error: MESSAGE` and picks the exit code.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace cugrade {

// Bad input from the user: a command line, a rubric, an exercise folder. Exit code: invalid.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A place in a text file, 1-based, for messages of the form FILE:LINE:COLUMN: MESSAGE.
struct SourceLocation {
    std::filesystem::path file;
    int line = 0;
    int column = 0;
};

std::string format_location(const SourceLocation& where);

// A mistake in a YAML file (rubric or exercise description), reported at its place.
class FileError : public UsageError {
public:
    FileError(const SourceLocation& where, const std::string& message)
        : UsageError(format_location(where) + ": " + message), where_(where) {}
    const SourceLocation& where() const { return where_; }

private:
    SourceLocation where_;
};

}  // namespace cugrade
