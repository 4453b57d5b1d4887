// A kernel's name as tools print it, without its parameters: "void partial_sums<256u>(const float *, unsigned long)"
// -> "partial_sums<256u>". compute-sanitizer and Nsight Compute both print kernels so.
#pragma once

#include <string>

namespace cugrade {

inline std::string kernel_name(const std::string& printed) {
    std::string name = printed.rfind("void ", 0) == 0 ? printed.substr(5) : printed;
    int depth = 0;
    for (std::size_t i = 0; i < name.size(); ++i) {
        depth += name[i] == '<' ? 1 : name[i] == '>' ? -1 : 0;
        if (name[i] == '(' && depth == 0) {
            return name.substr(0, i);
        }
    }
    return name;
}

}  // namespace cugrade
