#include "cpu/cpu_fault.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "build/course_tools.hpp"
#include "diagnose/sanitizer_report.hpp"
#include "protocol.hpp"

namespace cugrade {
namespace fs = std::filesystem;

namespace {

constexpr double addr2line_seconds = 20.0;

std::string file_name(const std::string& path) { return fs::path(path).filename().string(); }

// "sum.cu:23" for the instruction, from the innermost frame in the student's files, else the innermost; "" when the
// program has no line for it or addr2line is missing.
std::string line_of(const fs::path& program, std::uint64_t instruction, const std::vector<std::string>& student_files) {
    ProcessResult found;
    try {
        found = run_tool({"addr2line", "-i", "-e", program.string(), fmt::format("{:#x}", instruction)},
                         program.parent_path(), addr2line_seconds);
    } catch (const std::exception&) {
        return "";
    }
    if (!found.status.success()) {
        return "";
    }
    std::vector<std::string> frames;
    std::istringstream lines(found.output);
    for (std::string line; std::getline(lines, line);) {
        const auto colon = line.rfind(':');
        if (colon == std::string::npos || line.rfind("??", 0) == 0) {
            continue;
        }
        std::string number = line.substr(colon + 1);
        number = number.substr(0, number.find_first_not_of("0123456789"));
        if (number.empty() || number == "0") {
            continue;
        }
        frames.push_back(file_name(line.substr(0, colon)) + ":" + number);
    }
    for (const std::string& frame : frames) {
        if (std::find(student_files.begin(), student_files.end(), frame.substr(0, frame.rfind(':'))) !=
            student_files.end()) {
            return frame;
        }
    }
    return frames.empty() ? "" : frames.front();
}

struct Fault {
    nlohmann::json facts;
    std::size_t begin = 0;  // of its marker in the detail
    std::size_t end = 0;    // just past it
};

std::optional<Fault> fault_in(const std::string& detail) {
    const std::size_t begin = detail.find(protocol::cpu_fault_marker);
    if (begin == std::string::npos) {
        return std::nullopt;
    }
    const std::size_t json_begin = begin + std::string_view(protocol::cpu_fault_marker).size();
    const std::size_t close = detail.find("}]", json_begin);
    if (close == std::string::npos) {
        return std::nullopt;
    }
    nlohmann::json facts = nlohmann::json::parse(detail.substr(json_begin, close + 1 - json_begin), nullptr, false);
    if (!facts.is_object()) {
        return std::nullopt;
    }
    return Fault{std::move(facts), begin, close + 2};
}

void explain(CaseResult& result, const Fault& fault, const std::string& line) {
    const nlohmann::json& facts = fault.facts;
    const std::string access = facts.value("access", "access");
    const std::string kernel = facts.value("kernel", "a kernel");
    const std::string outside = facts.value("outside", "far");
    const std::string at = line.empty() ? "" : " at " + line;
    std::string detail = result.detail;
    std::size_t begin = fault.begin;
    while (begin > 0 && detail[begin - 1] == ' ') {
        --begin;
    }
    detail.replace(begin, fault.end - begin, at);

    Diagnosis diagnosis;
    diagnosis.kind = "memory";
    diagnosis.scope = "this case";
    diagnosis.topic = "bounds";
    diagnosis.evidence.push_back(
        fmt::format("thread ({}) of block ({})", facts.value("thread", "?"), facts.value("block", "?")));
    const std::string operation = access == "access" ? "access" : access;
    if (outside == "far") {
        diagnosis.category = "an invalid access in global memory (CPU self-check)";
        diagnosis.summary = fmt::format("CPU self-check: an invalid {} in global memory, far from every array, in {}{}",
                                        operation, kernel, at);
        diagnosis.hint = stray_access_hint(StrayAccess::far);
        result.detail = std::move(detail);
        result.diagnosis = std::move(diagnosis);
        return;
    }
    const std::size_t distance = facts.value("distance", std::size_t{0});
    const std::size_t allocation = facts.value("allocation", std::size_t{0});
    const std::string where =
        outside == "after" ? fmt::format("{} bytes past the end of an array of {} bytes", distance, allocation)
                           : fmt::format("{} bytes before the start of an array of {} bytes", distance, allocation);
    diagnosis.category = fmt::format("an out-of-bounds {} in global memory (CPU self-check)", operation);
    diagnosis.summary =
        fmt::format("CPU self-check: an out-of-bounds {} in global memory in {}{}", operation, kernel, at);
    diagnosis.evidence.push_back(where);
    diagnosis.hint = stray_access_hint(access == "read" ? StrayAccess::read : StrayAccess::write);
    result.status = Status::memory_error;
    result.detail = fmt::format("the CPU self-check stopped an access outside every array: a {} {} in {}{}", operation,
                                where, kernel, at);
    result.diagnosis = std::move(diagnosis);
}

}  // namespace

void explain_cpu_faults(const fs::path& program, const std::vector<std::string>& student_files, RunResult& run) {
    std::map<std::uint64_t, std::string> lines;
    for (CaseResult& result : run.cases) {
        const std::optional<Fault> fault = fault_in(result.detail);
        if (!fault) {
            continue;
        }
        const std::uint64_t instruction = fault->facts.value("instruction", std::uint64_t{0});
        if (instruction != 0 && !lines.contains(instruction)) {
            lines[instruction] = line_of(program, instruction, student_files);
        }
        explain(result, *fault, instruction != 0 ? lines[instruction] : "");
    }
}

}  // namespace cugrade
