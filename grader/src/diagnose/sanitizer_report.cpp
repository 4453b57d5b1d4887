#include "diagnose/sanitizer_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <regex>
#include <sstream>

#include "base/kernel_name.hpp"

namespace cugrade {

std::string to_string(SanitizerTool tool) {
    switch (tool) {
        case SanitizerTool::memcheck: return "memcheck";
        case SanitizerTool::initcheck: return "initcheck";
        case SanitizerTool::synccheck: return "synccheck";
        case SanitizerTool::racecheck: return "racecheck";
    }
    return "memcheck";
}

std::vector<std::string> sanitizer_command(const std::string& compute_sanitizer, SanitizerTool tool) {
    std::vector<std::string> command = {compute_sanitizer, "--tool", to_string(tool)};
    if (tool == SanitizerTool::racecheck) {
        // The analysis report names each pair of racing lines once. Reporting every hazard instead costs racecheck
        // about half a second per launch of a racy kernel (17024 hazards for sum's missing barrier at n = 4099), and
        // in a batch those launches add up to minutes; the analysis costs it almost nothing.
        command.insert(command.end(), {"--racecheck-report", "analysis"});
        // Races are on shared memory; tracking the device heap's allocations costs each start (8 racechecks
        // started at once: 2.9 s instead of 3.4 s on an H200) and checks nothing racecheck reports.
        command.insert(command.end(), {"--check-device-heap", "no"});
    }
    if (tool == SanitizerTool::memcheck) {
        // The grader's own leaks (a buffer of a case cut short by a CUDA error) are not the submission's.
        command.insert(command.end(), {"--leak-check", "no"});
    }
    // The grader's own CUDA calls that fail by design (probing a kernel's parameters) are not the submission's
    // errors, and would use up the print limit before the submission's own.
    command.insert(command.end(), {"--report-api-errors", "no", "--error-exitcode",
                                   std::to_string(sanitizer_error_exit_code), "--print-limit"});
    // racecheck's analysis prints a line pair for each race of each launch, and every race case's launches need
    // theirs (a case's verdict is the report within its part of the output): ten reports, three calls of two racy
    // kernels, ran out within a case's second call. A hundred is about 25 KB. memcheck stops the launch it reports.
    command.push_back(tool == SanitizerTool::racecheck ? "100" : "10");
    return command;
}

// racecheck's analysis names each race once: the first access on its headline, then each access that races with it,
// each line behind "=========":
//   Error: Race reported between Write access at partial_sums(const float *, unsigned long, float *)+0x2f0 in sum.cu:16
//       and Read access at partial_sums(const float *, unsigned long, float *)+0x2d0 in sum.cu:16 [4 hazards]
// Reporting single hazards instead, it prints a headline and the two accesses:
//   Error: Potential RAW hazard detected at __shared__ 0x580 in block (2,0,0) :
//       Write Thread (96,0,0) at partial_sums(const float *, unsigned long, float *)+0x2f0 in sum.cu:16
//       Read Thread (32,0,0) at partial_sums(const float *, unsigned long, float *)+0x2d0 in sum.cu:16
std::string first_race_report(const std::string& output) {
    static const std::regex prefix(R"(^=+\s*(Error:\s*)?)");
    static const std::regex offset(R"(\+0x[0-9a-fA-F]+)");
    static const std::regex spaces(R"(\s+)");
    static const std::regex before_colon(R"(\s+:\s*$)");
    std::istringstream lines(output);
    std::string report;
    bool analysis = false;
    int accesses = 0;
    for (std::string line; std::getline(lines, line);) {
        const bool headline =
            line.find("hazard detected") != std::string::npos || line.find("Race reported") != std::string::npos;
        line = std::regex_replace(line, prefix, "");
        line = std::regex_replace(line, offset, "");
        line = std::regex_replace(line, before_colon, ":");
        line = std::regex_replace(line, spaces, " ");
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        if (report.empty()) {
            if (headline) {
                report = line;
                analysis = line.find("Race reported") != std::string::npos;
            }
            continue;
        }
        if (headline || line.empty()) {
            break;  // the next report, or the end of this one
        }
        if (analysis) {
            // Each racing access begins with "and"; a long kernel name goes on a line of its own, as does the
            // count of hazards: "and Read access at", "tree(const float *, ...) in minmax.cu:9", "[2540 hazards]".
            const bool next_access = line.rfind("and ", 0) == 0;
            if (next_access && ++accesses > 2) {
                break;
            }
            report += (next_access ? "; " : " ") + line;
            continue;
        }
        if (line.find(" Thread (") == std::string::npos || ++accesses > 2) {
            break;
        }
        report += (accesses == 1 && report.back() == ':' ? " " : "; ") + line;
    }
    return report;
}

bool sanitizer_said_anything(const std::string& output) {
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        const std::size_t at = line.find("=========");
        if (at == std::string::npos) {
            continue;
        }
        const std::size_t said = line.find_first_not_of("= \t\r", at);
        if (said != std::string::npos && line.compare(said, std::string::npos, "COMPUTE-SANITIZER") != 0) {
            return true;
        }
    }
    return false;
}

std::optional<int> race_reports_left_out(const std::string& output) {
    // "========= RACECHECK SUMMARY: 10 hazards displayed (30 errors, 0 warnings)"; the last one: a kernel's printf
    // can print such a line too, but only before the program ends.
    static const std::regex summary(
        R"(RACECHECK SUMMARY: ([\d,]+) hazards? displayed \(([\d,]+) errors?, ([\d,]+) warnings?\))");
    const auto count = [](const std::string& digits) {
        std::string plain;
        std::copy_if(digits.begin(), digits.end(), std::back_inserter(plain), [](char c) { return c != ','; });
        return plain.size() > 9 ? 999'999'999 : std::stoi(plain);
    };
    std::optional<int> left_out;
    for (auto it = std::sregex_iterator(output.begin(), output.end(), summary); it != std::sregex_iterator(); ++it) {
        const std::smatch& found = *it;
        left_out = std::max(0, count(found[2]) + count(found[3]) - count(found[1]));
    }
    return left_out;
}

namespace {

// One error as memcheck, initcheck and synccheck print it: a headline one space behind "=========", then its facts
// indented further:
//   ========= Invalid __global__ write of size 4 bytes
//   =========     at oob_write(float *, int)+0x70 in /work/sum.cu:8
//   =========     by thread (232,0,0) in block (3,0,0)
//   =========     Access to 0x7f3a2e200fa0 is out of bounds
//   =========     and is 1 bytes after the nearest allocation at 0x7f3a2e200000 of size 4,000 bytes
// (compute-sanitizer 2025.3; older versions say "Address 0x... is out of bounds").
struct Record {
    std::string headline;
    std::string kernel;  // its name without its parameters
    std::string file;    // as printed: a path
    int line = 0;
    std::string thread, block;
    std::string address;  // "is out of bounds", "is misaligned"
    std::string nearest;  // "1 bytes after the nearest allocation at 0x... of size 4,000 bytes"
    std::string text;     // its lines as printed, host backtraces left out
};

bool is_meta(const std::string& headline) {
    for (const char* meta : {"COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY", "RACECHECK SUMMARY",
                             "Saved host backtrace", "Target application returned", "Error: process didn't terminate",
                             "Device Frame", "Host Frame", "Note:", "Warning:"}) {
        if (headline.rfind(meta, 0) == 0) {
            return true;
        }
    }
    return headline.empty();
}

std::vector<Record> records_of(const std::string& output) {
    static const std::regex marked(R"(^=========( +)(.*?)\s*$)");
    static const std::regex at_function(R"(^at (.+?)\+0x[0-9a-fA-F]+ in (.+):(\d+)$)");
    static const std::regex at_address(R"(^at 0x[0-9a-fA-F]+ in (.+):(\d+):(.+)$)");
    static const std::regex by_thread(R"(^by thread \(([\d,\s]+)\) in block \(([\d,\s]+)\))");
    static const std::regex address(R"(^(?:Address|Access (?:to|at)) 0x[0-9a-fA-F]+(?: (is .+?))?\.?$)");
    static const std::regex nearest(R"(^and is (.+)$)");
    std::vector<Record> records;
    std::istringstream lines(output);
    bool in_backtrace = false;
    for (std::string line; std::getline(lines, line);) {
        std::smatch match;
        if (!std::regex_match(line, match, marked)) {
            continue;
        }
        const std::string text = match[2];
        if (match[1].length() == 1) {
            in_backtrace = false;
            if (is_meta(text)) {
                in_backtrace = text.rfind("Saved host backtrace", 0) == 0;
                continue;
            }
            records.push_back({text, "", "", 0, "", "", "", "", line + "\n"});
            continue;
        }
        if (records.empty() || in_backtrace || text.rfind("Saved host backtrace", 0) == 0 ||
            text.rfind("Host Frame", 0) == 0) {
            in_backtrace = in_backtrace || text.rfind("Saved host backtrace", 0) == 0;
            continue;
        }
        Record& record = records.back();
        record.text += line + "\n";
        std::smatch fact;
        if (record.file.empty() && std::regex_match(text, fact, at_function)) {
            record.kernel = fact[1];
            record.file = fact[2];
            record.line = std::stoi(fact[3]);
        } else if (record.file.empty() && std::regex_match(text, fact, at_address)) {
            record.file = fact[1];
            record.line = std::stoi(fact[2]);
            record.kernel = fact[3];
        } else if (record.thread.empty() && std::regex_search(text, fact, by_thread)) {
            record.thread = fact[1];
            record.block = fact[2];
        } else if (record.address.empty() && std::regex_match(text, fact, address)) {
            record.address = fact[1];
        } else if (record.nearest.empty() && std::regex_match(text, fact, nearest)) {
            record.nearest = fact[1];
        }
    }
    return records;
}

std::string base_name(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string memory_space(const std::string& headline) {
    for (const auto& [marker, words] :
         {std::pair{"__global__", "global memory"}, std::pair{"__shared__", "shared memory"},
          std::pair{"__local__", "local memory"}}) {
        if (headline.find(marker) != std::string::npos) {
            return words;
        }
    }
    return "memory";
}

// "1,024" -> 1024; the figures of compute-sanitizer's messages may have thousands separators.
std::string plain_number(std::string text) {
    text.erase(std::remove(text.begin(), text.end(), ','), text.end());
    return text;
}

// Where an access fell, from memcheck's distance to the nearest allocation. memcheck counts from the allocation's
// last byte: the first element past the end is "1 bytes after" it.
std::string outside_allocation(std::uint64_t distance, bool after, std::uint64_t allocation, std::uint64_t access) {
    if (distance > std::max<std::uint64_t>(16 * allocation, 1 << 20)) {
        return fmt::format("{} bytes {} the nearest allocation: far from every array", distance,
                           after ? "past the end of" : "before the start of");
    }
    if (access > 0 && allocation % access == 0) {
        const std::uint64_t elements = allocation / access;
        if (after) {
            return fmt::format("index {} of an array of {} elements of {} bytes (the last is {})",
                               elements + (distance - 1) / access, elements, access, elements - 1);
        }
        return fmt::format("index -{} of an array of {} elements of {} bytes", (distance + access - 1) / access,
                           elements, access);
    }
    return fmt::format("{} bytes {} an allocation of {} bytes", after ? distance - 1 : distance,
                       after ? "past the end of" : "before the start of", allocation);
}

Diagnosis diagnose(SanitizerTool tool, const Record& record) {
    static const std::regex access(R"(^(Invalid|Misaligned) (?:(__\w+__) )?(read|write|atomic)\w* of size ([\d,]+))");
    static const std::regex uninitialized(R"(^Uninitialized (__\w+__ )?memory read of size ([\d,]+))");
    static const std::regex distance(
        R"(^([\d,]+) bytes (after|before) the nearest allocation at 0x[0-9a-fA-F]+ of size ([\d,]+) bytes)");
    Diagnosis diagnosis;
    diagnosis.kind = tool == SanitizerTool::memcheck    ? "memory"
                     : tool == SanitizerTool::initcheck ? "uninitialized"
                     : tool == SanitizerTool::synccheck ? "barrier"
                                                        : "race";
    std::smatch match;
    std::string what;
    std::uint64_t access_size = 0;
    const bool misaligned = record.address.find("misaligned") != std::string::npos;
    if (std::regex_search(record.headline, match, access)) {
        const std::string space = memory_space(record.headline);
        const std::string operation = match[3] == "atomic" ? "atomic operation" : std::string(match[3]);
        const bool out_of_bounds = record.address.find("out of bounds") != std::string::npos;
        access_size = std::stoull(plain_number(match[4]));
        const char* kind = match[1] == "Misaligned" || misaligned ? "a misaligned"
                           : out_of_bounds                        ? "an out-of-bounds"
                                                                  : "an invalid";
        what = fmt::format("{} {} of {} bytes in {}", kind, operation, plain_number(match[4]), space);
        diagnosis.category = fmt::format("{} {} in {}", kind, operation, space);
        diagnosis.topic = match[1] == "Misaligned" || misaligned ? "alignment"
                          : space == "shared memory"             ? "shared_memory"
                                                                 : "bounds";
        if (match[1] == "Misaligned" || misaligned) {
            diagnosis.hint = "an address that is not a multiple of the access's size: a pointer cast to a wider "
                             "type (float4, double) at an offset that is not a multiple of its width";
        } else if (space == "shared memory") {
            diagnosis.hint = "an index into a __shared__ array past its size: check the array's size against the "
                             "block's threads and the index arithmetic";
        } else {
            diagnosis.hint = stray_access_hint(match[3] == "read" ? StrayAccess::read : StrayAccess::write);
        }
    } else if (std::regex_search(record.headline, match, uninitialized)) {
        what = fmt::format("a read of {} bytes of {} that nothing wrote", plain_number(match[2]),
                           memory_space(record.headline));
        diagnosis.category = fmt::format("a read of {} that nothing wrote", memory_space(record.headline));
        diagnosis.topic = "scratch";
        diagnosis.hint = "memory read before anything wrote it: scratch arrives full of garbage, so set every counter, "
                         "flag and partial sum (a kernel of your own, or cudaMemsetAsync on the stream) before a "
                         "kernel reads it, on every call";
    } else if (record.headline.rfind("Barrier error", 0) == 0) {
        const auto dot = record.headline.find(". ");
        diagnosis.category = "a barrier that not every thread of the block reaches";
        diagnosis.topic = "barrier";
        what = "a barrier that not every thread of the block reaches" +
               (dot == std::string::npos ? std::string() : " (" + record.headline.substr(dot + 2) + ")");
        diagnosis.hint = "__syncthreads() inside a branch or a loop that some threads of the block skip or leave "
                         "early: every thread of the block must reach the same barrier, so move it out of the if";
    } else {
        what = record.headline;
        diagnosis.category = "a fault without a place in the code";
        diagnosis.topic = "bounds";
        if (!what.empty()) {
            what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
        }
        diagnosis.hint = stray_access_hint(StrayAccess::far);
    }
    diagnosis.summary =
        fmt::format("compute-sanitizer {}: {}{}{}", to_string(tool), what,
                    record.kernel.empty() ? "" : " in " + kernel_name(record.kernel),
                    record.file.empty() ? "" : fmt::format(" at {}:{}", base_name(record.file), record.line));
    if (!record.thread.empty()) {
        diagnosis.evidence.push_back(fmt::format("thread ({}) of block ({})", record.thread, record.block));
    }
    if (std::regex_search(record.nearest, match, distance)) {
        diagnosis.evidence.push_back(outside_allocation(std::stoull(plain_number(match[1])), match[2] == "after",
                                                        std::stoull(plain_number(match[3])), access_size));
    }
    diagnosis.category += " (" + to_string(tool) + ")";
    diagnosis.tool_output = record.text;
    return diagnosis;
}

}  // namespace

std::string stray_access_hint(StrayAccess access) {
    switch (access) {
        case StrayAccess::read:
            return "a thread reads past the end of an array: guard the load with the bound (i < n), and give threads "
                   "past the end a neutral value instead";
        case StrayAccess::write:
            return "a thread past the end of the array still stores: guard every store with the bound (i < n); a grid "
                   "rounded up by ceiling division has threads past the end";
        case StrayAccess::far: break;
    }
    return "an address far from any of the arrays: an index computed with the wrong stride, or an int product that "
           "overflows; check the index arithmetic of the line shown";
}

namespace {

// What every race diagnosis says, before the report's own accesses are read.
Diagnosis race_basis(const std::string& report, bool in_one_warp) {
    Diagnosis diagnosis;
    diagnosis.kind = "race";
    diagnosis.category = "a race on shared memory (racecheck)";
    diagnosis.topic = "barrier";
    diagnosis.hint = "a __syncthreads() between a thread's write to shared memory and another thread's read of it "
                     "(or its next write); in a loop of steps, one at the end of every step";
    diagnosis.tool_output = report;
    if (in_one_warp) {
        diagnosis.category = "a race between threads of one warp (racecheck)";
        diagnosis.hint = "threads of one warp do not run in lockstep: a __syncwarp() between a write to shared memory "
                         "and another lane's read of it (or a __syncthreads() where all the block's threads meet)";
    }
    return diagnosis;
}

std::string race_place(const std::string& access, const std::string& file, const std::string& line) {
    return fmt::format("{} at {}:{}", access == "Write" ? "a write" : "a read", base_name(file), line);
}

// The analysis: "Race reported between Write access at K(...) in sum.cu:16; and Read access at K(...) in
// sum.cu:16 [4 hazards]", its first pair the one to name.
Diagnosis analysed_race(Diagnosis diagnosis, const std::string& report, const std::string& no_barrier) {
    static const std::regex analysed(R"((Write|Read) access at (.+?) in (\S+):(\d+)(?: \[(\d+) hazards?\])?)");
    std::vector<std::smatch> accesses;
    for (auto it = std::sregex_iterator(report.begin(), report.end(), analysed);
         it != std::sregex_iterator() && accesses.size() < 2; ++it) {
        accesses.push_back(*it);
    }
    if (accesses.size() < 2) {
        diagnosis.summary = "compute-sanitizer racecheck: " + report;
        return diagnosis;
    }
    const bool two_writes = accesses[0][1] == "Write" && accesses[1][1] == "Write";
    diagnosis.summary =
        fmt::format("compute-sanitizer racecheck: {} on shared memory {} in {}: {} and {}",
                    two_writes ? "two writes" : "a write and a read", no_barrier, kernel_name(accesses[0][2]),
                    race_place(accesses[0][1], accesses[0][3], accesses[0][4]),
                    race_place(accesses[1][1], accesses[1][3], accesses[1][4]));
    if (accesses[1][5].matched) {
        diagnosis.evidence.push_back(
            fmt::format("{} hazards between these two lines in one launch", std::string(accesses[1][5])));
    }
    return diagnosis;
}

// A single hazard: "Potential RAW hazard detected at __shared__ 0x580 in block (2,0,0): Write Thread (96,0,0) at
// K(...) in sum.cu:16; Read Thread (32,0,0) at K(...) in sum.cu:16".
Diagnosis single_hazard(Diagnosis diagnosis, const std::string& report, bool in_one_warp,
                        const std::string& no_barrier) {
    static const std::regex headline(
        R"(Potential (RAW|WAR|WAW) hazard detected at (\w+) 0x[0-9a-fA-F]+ in block \(([\d,]+)\))");
    static const std::regex accessed(R"((Write|Read) Thread \(([\d,]+)\) at (.+?) in (\S+):(\d+))");
    std::smatch match;
    if (!std::regex_search(report, match, headline)) {
        diagnosis.summary = "compute-sanitizer racecheck: " + report;
        return diagnosis;
    }
    const std::string kind = match[1] == "RAW"   ? "a read after a write"
                             : match[1] == "WAR" ? "a write after a read"
                                                 : "two writes";
    const std::string space = memory_space(match[2]);
    const std::string block = match[3];
    if (space != "shared memory" && !in_one_warp) {
        diagnosis.category = "a race on " + space + " (racecheck)";
    }
    std::vector<std::string> places, threads;
    std::string kernel;
    for (auto it = std::sregex_iterator(report.begin(), report.end(), accessed); it != std::sregex_iterator(); ++it) {
        const std::smatch& access = *it;
        places.push_back(race_place(access[1], access[4], access[5]));
        threads.push_back(
            fmt::format("thread ({}) {}", std::string(access[2]), access[1] == "Write" ? "writes" : "reads"));
        kernel = kernel_name(access[3]);
    }
    diagnosis.summary = fmt::format("compute-sanitizer racecheck: {} on {} {}{}{}", kind, space, no_barrier,
                                    kernel.empty() ? "" : " in " + kernel,
                                    places.size() == 2 ? ": " + places[0] + " and " + places[1] : "");
    if (!threads.empty()) {
        diagnosis.evidence.push_back(fmt::format("block ({}): {}", block, fmt::join(threads, ", ")));
    }
    return diagnosis;
}

}  // namespace

std::optional<Diagnosis> race_diagnosis(const std::string& output) {
    const std::string report = first_race_report(output);
    if (report.empty()) {
        return std::nullopt;
    }
    // racecheck reports a race between threads of one warp as a warning: "Warning: (Warp Level Programming) ...".
    const bool in_one_warp = report.find("Warp Level Programming") != std::string::npos;
    Diagnosis diagnosis = race_basis(report, in_one_warp);
    const std::string no_barrier =
        in_one_warp ? "between threads of one warp, with no __syncwarp() between" : "with no barrier between";
    if (report.find("Race reported") != std::string::npos) {
        return analysed_race(std::move(diagnosis), report, no_barrier);
    }
    return single_hazard(std::move(diagnosis), report, in_one_warp, no_barrier);
}

std::optional<Diagnosis> first_sanitizer_error(SanitizerTool tool, const std::string& output,
                                               const std::vector<std::string>& student_files) {
    const std::vector<Record> records = records_of(output);
    const auto in_student_code = [&](const Record& r) {
        return !r.file.empty() &&
               std::find(student_files.begin(), student_files.end(), base_name(r.file)) != student_files.end();
    };
    // The submission's own line first; for memcheck, then any device-side error, and an API call's failure only
    // when nothing else. initcheck and synccheck count the submission's code alone: the grader's own kernels read
    // every element of an output, written or not, when the rerun leaves outputs unpoisoned.
    using Wanted = std::function<bool(const Record&)>;
    std::vector<Wanted> wanted = {in_student_code};
    if (tool == SanitizerTool::memcheck) {
        wanted.push_back([](const Record& r) { return !r.file.empty(); });
        wanted.push_back([](const Record&) { return true; });
    }
    const Record* chosen = nullptr;
    for (const auto& accepts : wanted) {
        const auto found = std::find_if(records.begin(), records.end(), accepts);
        if (found != records.end()) {
            chosen = &*found;
            break;
        }
    }
    if (chosen == nullptr) {
        return std::nullopt;
    }
    return diagnose(tool, *chosen);
}

}  // namespace cugrade
