// The reference as a kit compiles it: without its comments, and with every name the reference itself declares (its
// kernels, helpers, constants, types, variables, macros) replaced by an opaque one, so that nothing in the kit's
// objects (symbol tables, the kernels' registration strings, PTX) reads like the instructor's source. The entry
// points and every name the toolkit, the system or the contract header declares keep their names.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace cugrade {

// The identifiers of C or C++ text outside its comments, string and character literals and numbers.
std::set<std::string> identifiers_in(const std::string& text);

struct OpaqueSource {
    std::string text;                  // compiles as the original did
    std::vector<std::string> renamed;  // the original names, in the order of their opaque ones
};

// Renames every identifier of `source` not in `known` and not reserved to the implementation (leading "__" or "_"
// and a capital). #include and #pragma lines stay as they are.
OpaqueSource with_opaque_names(const std::string& source, const std::set<std::string>& known);

// C++20's keywords, CUDA's declaration specifiers and the preprocessor's words: names no header declares.
const std::set<std::string>& language_words();

}  // namespace cugrade
