// What a submission included, from the compiler's dependency list (nvcc -MD): the headers it pulled in, in the order
// the compiler opened them, and for each known library (api_policy.hpp) the submission's own #include that brought it.
// The submission is compiled with `-include CONTRACT -include submission_start_header`: every header listed after
// that empty header came from the submission's own lines, never from nvcc, the contract or what the contract includes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "course/api_policy.hpp"

namespace cugrade {

// The empty header that marks where the submission's own includes start, in the compile's folder.
inline constexpr const char* submission_start_header = "cugrade-submission-starts-here.h";

// One line of C or C++ source without its comments, each block comment a space as the compiler reads it; `in_block`
// carries an unfinished /* ... */ from one line to the next.
std::string code_without_comments(const std::string& line, bool& in_block);

// The files a make-style dependency list names as prerequisites, in its order (the first is the compiled file).
std::vector<std::string> read_dependency_list(const std::filesystem::path& file);

// An #include line of the submission, comments and #if aside.
struct IncludeDirective {
    std::size_t line = 0;  // 1-based
    std::string written;   // as written: "<cub/cub.cuh>", "\"/usr/include/x.h\"", or the macro of a computed include
    std::string name;      // inside the brackets or quotes; empty for a computed include
};
std::vector<IncludeDirective> include_directives(const std::string& source);

struct IncludedLibrary {
    const KnownLibrary* library = nullptr;
    std::string header;                         // the library's header that came in: "cub/block/block_scan.cuh"
    std::optional<IncludeDirective> directive;  // the submission's #include that brought it, where known
    bool named = false;                         // whether that #include names the library's header itself
};

struct SubmissionLibraries {
    // Each library the submission's own includes pulled in, once, in the order of its lines; a library that another
    // library's header brought in (CUB through <thrust/reduce.h>) is that library's, not one of its own.
    std::vector<IncludedLibrary> included;
    // Every library (by name) any of those headers belongs to, its own or another's.
    std::set<std::string> present;
};

// Nullopt when the list has no submission_start_header (a build from before it was kept).
std::optional<SubmissionLibraries> included_libraries(const std::vector<std::string>& dependencies,
                                                      const std::string& source);

}  // namespace cugrade
