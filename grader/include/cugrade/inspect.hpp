// Static checks on the student's compiled object, before any of its code runs: what it defines (no symbol the grader's
// program already has: no interposing the CUDA runtime, the C library or the harness), what it calls (none of the
// libraries or functions the rubric forbids), and that none of its code runs before main.
#pragma once

#include <cctype>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cugrade/build.hpp"
#include "cugrade/rubric.hpp"

namespace cugrade {

// The libraries `forbid: libraries:` may name, each recognised by its C++ namespace or C prefix.
const std::vector<std::string>& known_libraries();

// The defaults: every known library, and the C functions a submission has no business calling (processes, network,
// files, dynamic loading, streams of its own, host-mapped memory).
std::vector<std::string> default_forbidden_libraries();
std::vector<std::string> default_forbidden_functions();

struct Finding {
    std::string rule;     // "defines", "forbidden-library", "forbidden-function", "runs-before-main"
    std::string symbol;   // as a person reads it: "cudaEventElapsedTime", "cub::DeviceReduce::Sum", "fork()"
    std::string message;  // "sum.cu:12: calls fork(), which ..."
};

struct Inspection {
    std::vector<Finding> findings;
    bool ok() const { return findings.empty(); }
};

// One line of `nm` output: a name and its type letter.
struct Symbol {
    std::string name;
    char type = '?';
    bool defined() const { return type != 'U' && type != 'w' && type != 'v'; }
    bool global() const { return std::isupper(static_cast<unsigned char>(type)) || type == 'u' || type == 'i'; }
    bool weak() const { return type == 'W' || type == 'V'; }
};
std::vector<Symbol> parse_nm(const std::string& output);  // symbol versions ("@GLIBC_2.2.5") dropped

// The names of the grader's program without the submission: the global symbols it defines and the ones it takes
// from shared libraries. A submission that defines one of them would replace it.
struct ProgramSymbols {
    std::set<std::string> defined;
    std::set<std::string> undefined;
};
ProgramSymbols read_program_symbols(const std::filesystem::path& file);

// Inspects the built object of `build`; `shown` is the submission's path as the user gave it, for messages.
Inspection inspect_submission(const BuildResult& build, const std::filesystem::path& shown,
                              const std::vector<std::string>& entry_points, const ForbiddenApis& forbidden,
                              const Toolchain& toolchain);

}  // namespace cugrade
