// What a submission may use: the libraries it may not (recognised by the headers it includes, and by their names in
// its object file), and the
// functions it may call. Calls are judged by allowlist: what a CUDA exercise needs (the CUDA runtime calls the
// contracts permit, printing, strings, math, the C++ standard library) is allowed, a few families are refused with
// a reason of their own, and everything else is refused as unknown. A rubric adds to either side (rubric.hpp's
// ApiRules); docs/rubric.md lists the defaults.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "course/rubric.hpp"

namespace cugrade {

struct KnownLibrary {
    std::string name;                     // as a rubric names it: "cub"
    std::string display;                  // as a person reads it: "CUB"
    std::vector<std::string> namespaces;  // C++: a demangled name starting with one of these
    std::vector<std::string> prefixes;    // C: a name starting with one of these
    std::string source_hint;              // what to look for in the source, for the line
    std::vector<std::string> needs;       // what its own code calls, allowed with it (globs)
    // Its headers, by one component of their path: a folder ("cub/") or a file name glob ("cublas*.h").
    std::vector<std::string> headers;
    // The libraries (by name) its own headers include: what comes in with it is part of it.
    std::vector<std::string> brings;
};
const std::vector<KnownLibrary>& library_catalogue();

// The library a header belongs to, with the header as its own #include names it ("cub/block/block_scan.cuh"), read
// from the header's path; null for any other header (the CUDA runtime's, the C++ library's, CCCL's cuda/ and nv/).
struct LibraryHeader {
    const KnownLibrary* library = nullptr;
    std::string name;
};
LibraryHeader library_of_header(const std::string& path);

// The names a rubric's `forbid.libraries` and `allow.libraries` may give.
const std::vector<std::string>& known_libraries();

struct CallVerdict {
    bool allowed = true;
    std::string reason;  // why not, as the end of a sentence: "a submission starts no processes"
};

class ApiPolicy {
public:
    // `math_library` holds the functions the math library (libm) exports, all of which a submission may call.
    ApiPolicy(const ApiRules& rules, std::set<std::string> math_library);

    // Whether a submission may call (or take the address of) the function or object `name`, as linkers name it.
    CallVerdict judge_call(const std::string& name) const;

    // Whether the library is forbidden to submissions.
    bool forbids_library(const std::string& library) const;

private:
    ApiRules rules_;
    std::set<std::string> math_library_;
};

}  // namespace cugrade
