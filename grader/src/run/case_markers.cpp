#include "run/case_markers.hpp"

#include <string_view>

namespace cugrade {

MarkedOutput split_at_markers(const std::string& output, const std::string& marker) {
    MarkedOutput split;
    const std::string tag = marker + " ";
    std::string* current = nullptr;
    std::size_t line_start = 0;
    while (line_start < output.size()) {
        std::size_t line_end = output.find('\n', line_start);
        line_end = line_end == std::string::npos ? output.size() : line_end + 1;
        const std::string_view line(output.data() + line_start, line_end - line_start);
        if (const std::size_t at = line.find(tag); at != std::string_view::npos) {
            // Text the program printed before the marker on the same line is the case before's.
            const std::string_view before = line.substr(0, at);
            split.unmarked += before;
            if (current != nullptr) {
                *current += before;
            }
            std::string id(line.substr(at + tag.size()));
            while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) {
                id.pop_back();
            }
            split.order.push_back(id);
            current = &split.by_case[id];
        } else {
            split.unmarked += line;
            if (current != nullptr) {
                *current += line;
            }
        }
        line_start = line_end;
    }
    return split;
}

}  // namespace cugrade
