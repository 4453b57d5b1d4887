#include "build/diagnostics.hpp"

#include <regex>
#include <set>
#include <sstream>
#include <vector>

namespace cugrade {

std::string present_diagnostics(const std::string& output, const std::string& file_name, const std::string& shown) {
    // Messages are separated by blank lines; a repeated message is dropped whole.
    std::vector<std::string> messages;
    std::set<std::string> seen;
    std::istringstream lines(output);
    std::string message;
    const auto keep = [&] {
        if (!message.empty() && seen.insert(message).second) {
            messages.push_back(message);
        }
        message.clear();
    };
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) {
            keep();
        } else {
            message += line + "\n";
        }
    }
    keep();
    std::string text;
    for (const auto& m : messages) {
        text += (text.empty() ? "" : "\n") + m;
    }

    const std::string file = std::regex_replace(file_name, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
    text = std::regex_replace(text, std::regex("(^|\n)" + file + R"(\((\d+)\): )"), "$1" + shown + ":$2: ");
    return std::regex_replace(text, std::regex("(^|\n)" + file + ":"), "$1" + shown + ":");
}

}  // namespace cugrade
