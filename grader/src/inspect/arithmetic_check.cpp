#include "inspect/arithmetic_check.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "sandbox/process.hpp"
#include "build/object_file.hpp"
#include "base/scratch_dir.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

constexpr double disassembly_seconds = 60.0;

std::vector<std::string> operands_of(const std::string& text) {
    std::vector<std::string> operands;
    std::istringstream in(text);
    for (std::string operand; std::getline(in, operand, ',');) {
        operand.erase(0, operand.find_first_not_of(" \t"));
        operand.erase(operand.find_last_not_of(" \t") + 1);
        operands.push_back(operand);
    }
    return operands;
}

// RZ, -RZ, |RZ|, RZ.H0_H0: the zero register, whatever half of it is read.
bool is_zero_register(std::string operand) {
    operand.erase(std::remove_if(operand.begin(), operand.end(), [](char c) { return c == '-' || c == '|'; }),
                  operand.end());
    return operand.substr(0, operand.find('.')) == "RZ";
}

bool is_one_of(const std::string& root, std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* name) { return root == name; });
}

std::optional<ArithmeticClass> half_arithmetic_of(const std::string& root, const std::vector<std::string>& operands) {
    // 0 * 0 + constant: how sm_80 and later move a constant into a register, in float code as in any other.
    if (root == "HFMA2" && operands.size() >= 3 && is_zero_register(operands[1]) && is_zero_register(operands[2])) {
        return std::nullopt;
    }
    // x + 0: how sm_75 converts a half to a float (HADD2.F32 R0, -RZ, R2.H0_H0).
    if (root == "HADD2" && operands.size() >= 3 && (is_zero_register(operands[1]) || is_zero_register(operands[2]))) {
        return std::nullopt;
    }
    return ArithmeticClass::packed_half;
}

}  // namespace

std::optional<ArithmeticClass> arithmetic_of(const std::string& instruction) {
    const std::string opcode = instruction.substr(0, instruction.find_first_of(" \t"));
    const std::string root = opcode.substr(0, opcode.find('.'));
    const std::string modifiers = opcode.size() > root.size() ? opcode.substr(root.size()) : "";
    const std::vector<std::string> operands =
        operands_of(opcode.size() < instruction.size() ? instruction.substr(opcode.size()) : "");
    if (is_one_of(root, {"DADD", "DMUL", "DFMA", "DSETP", "DSET", "DMNMX"}) ||
        (root == "MUFU" && modifiers.find("64") != std::string::npos)) {
        return ArithmeticClass::fp64;
    }
    if (root.size() > 3 && root.compare(root.size() - 3, 3, "MMA") == 0) {
        return is_one_of(root, {"IMMA", "IGMMA", "BMMA", "BGMMA", "UTCIMMA"}) ? ArithmeticClass::integer_mma
                                                                              : ArithmeticClass::float_mma;
    }
    if (is_one_of(root, {"HADD2", "HMUL2", "HFMA2", "HSETP2", "HSET2", "HMNMX2"})) {
        return half_arithmetic_of(root, operands);
    }
    return std::nullopt;
}

std::vector<ArithmeticUse> read_arithmetic(const std::string& listing, const std::string& submission_file) {
    // "	.section	.text._Z10sum_kernelPKfPfi,"ax",@progbits"
    static const std::regex function(R"(^\s*\.section\s+\.text\.([^,\s]+),)");
    // "	//## File "/tmp/b/sum.cu", line 7" or "//## File "...cuda_fp16.hpp", line 2504 inlined at "sum.cu", line
    // 33"
    static const std::regex location_mark(R"(^\s*//## File )");
    static const std::regex location(R"re("([^"]*)", line (\d+))re");
    // "        /*0110*/               @!P0 DADD R2, R6, R2 ;"
    static const std::regex instruction(R"(^\s*/\*[0-9a-fA-F]+\*/\s*(?:@!?U?P[0-9T]+\s+)?([A-Z][^;]*);)");
    std::vector<ArithmeticUse> uses;
    std::set<std::pair<std::string, ArithmeticClass>> seen;
    std::map<std::string, std::set<int>> lines_of;
    std::string current;
    int line = 0;
    std::istringstream lines(listing);
    std::smatch match;
    for (std::string text; std::getline(lines, text);) {
        if (std::regex_search(text, match, function)) {
            current = match[1].str();
            line = 0;
        } else if (std::regex_search(text, location_mark)) {
            for (std::sregex_iterator it(text.begin(), text.end(), location), end; it != end; ++it) {
                if (fs::path((*it)[1].str()).filename() == submission_file) {
                    line = std::stoi((*it)[2].str());
                    lines_of[current].insert(line);
                    break;
                }
            }
        } else if (!current.empty() && std::regex_search(text, match, instruction)) {
            const std::string code = match[1].str();
            if (const auto arithmetic = arithmetic_of(code); arithmetic && seen.emplace(current, *arithmetic).second) {
                const std::string opcode = code.substr(0, code.find_first_of(" \t"));
                uses.push_back({current, *arithmetic, opcode.substr(0, opcode.find('.')), line, {}});
            }
        }
    }
    for (auto& use : uses) {
        use.function_lines = lines_of[use.function];
    }
    std::stable_sort(uses.begin(), uses.end(), [](const ArithmeticUse& a, const ArithmeticUse& b) {
        return std::tie(a.line, a.function) < std::tie(b.line, b.function);
    });
    return uses;
}

namespace {

// The text of line `number` of `source` (from 1), its // comment left out.
std::string source_line(const std::string& source, int number) {
    std::istringstream in(source);
    std::string text;
    for (int i = 0; i < number && std::getline(in, text); ++i) {
    }
    return text.substr(0, text.find("//"));
}

// A literal without the f suffix (0.5, .5, 1e-3, 2.0e5) on the line: a double, where a float was meant.
std::optional<std::string> double_literal_in(const std::string& line_text) {
    static const std::regex double_literal(
        R"((?:^|[^A-Za-z0-9_.])((?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)(?![A-Za-z0-9_.]))");
    if (std::smatch m; std::regex_search(line_text, m, double_literal)) {
        return m[1].str();
    }
    return std::nullopt;
}

// What to do instead, for a person who wrote the line; `literal`: a double literal the line has.
std::string advice(ArithmeticClass arithmetic, const std::optional<std::string>& literal) {
    switch (arithmetic) {
        case ArithmeticClass::fp64:
            if (literal) {
                return fmt::format("{0} is a double; write {0}f, and keep every variable float", *literal);
            }
            return "a literal such as 0.5 is a double; write 0.5f, and keep every variable float";
        case ArithmeticClass::float_mma:
        case ArithmeticClass::integer_mma:
            return "multiply and add with ordinary instructions, not with wmma or mma fragments";
        case ArithmeticClass::packed_half: return "keep the values float, not __half or __nv_bfloat16";
    }
    return "";
}

// Where to point a person at: the line of the first instruction; for double arithmetic, the function's first line
// with a double literal, which is most often the cause (`sum * 0.5`) even where the compiler moved the instruction.
std::pair<int, std::optional<std::string>> where_to_point(const ArithmeticUse& use, const std::string& source) {
    if (use.arithmetic == ArithmeticClass::fp64) {
        if (auto literal = double_literal_in(source_line(source, use.line))) {
            return {use.line, literal};
        }
        for (const int line : use.function_lines) {
            if (auto literal = double_literal_in(source_line(source, line))) {
                return {line, literal};
            }
        }
    }
    return {use.line, std::nullopt};
}

std::string describe_failure(const std::string& tool, const ProcessResult& result) {
    return fmt::format("{} {}", fs::path(tool).filename().string(), result.status.describe());
}

ProcessResult run_reader(std::vector<std::string> argv, const fs::path& cwd) {
    ProcessOptions options;
    options.argv = std::move(argv);
    options.working_directory = cwd;
    options.output_limit = std::size_t{256} << 20;
    return run_process(options, std::chrono::duration<double>(disassembly_seconds));
}

// The listing of every cubin in `object`; an error message (first) when a tool could not make it.
std::pair<std::string, std::string> listing_of(const fs::path& object, const std::string& cuobjdump,
                                               const std::string& nvdisasm) {
    ScratchDir scratch("arithmetic");
    const ProcessResult extracted =
        run_reader({cuobjdump, "-xelf", "all", fs::absolute(object).string()}, scratch.path());
    if (!extracted.status.exited()) {
        return {describe_failure(cuobjdump, extracted), ""};
    }
    std::vector<fs::path> cubins;
    for (const auto& entry : fs::directory_iterator(scratch.path())) {
        if (entry.path().extension() == ".cubin") {
            cubins.push_back(entry.path());
        }
    }
    std::sort(cubins.begin(), cubins.end());
    std::string listing;
    for (const auto& cubin : cubins) {
        const ProcessResult listed = run_reader({nvdisasm, "-c", "-gi", cubin.string()}, scratch.path());
        if (!listed.status.success() || listed.output_truncated) {
            return {describe_failure(nvdisasm, listed), ""};
        }
        listing += listed.output;
    }
    return {"", listing};
}

}  // namespace

std::vector<Finding> check_arithmetic(const fs::path& object, const SubmissionFile& submission,
                                      const ContractRules& rules, const std::string& cuobjdump) {
    if (rules.refused_arithmetic.empty() || cuobjdump.empty()) {
        return {};
    }
    const std::string nvdisasm = (fs::path(cuobjdump).parent_path() / "nvdisasm").string();
    if (::access(nvdisasm.c_str(), X_OK) != 0) {
        return {};
    }
    const std::string shown = submission.shown.string();
    const auto [failure, listing] = listing_of(object, cuobjdump, nvdisasm);
    if (!failure.empty()) {
        return {{"arithmetic", "machine code",
                 fmt::format("{}: the grader could not read its machine code to check the exercise's arithmetic "
                             "rule ({}): simplify the file, or ask your instructor",
                             shown, failure)}};
    }
    std::vector<Finding> findings;
    for (const auto& use : read_arithmetic(listing, submission.name)) {
        if (rules.refused_arithmetic.count(use.arithmetic) == 0) {
            continue;
        }
        const auto [line, literal] = where_to_point(use, submission.bytes);
        const std::string where = line > 0 ? fmt::format("{}:{}", shown, line) : shown;
        const std::string function = readable_name(use.function);
        findings.push_back({"arithmetic", function + " " + arithmetic_key(use.arithmetic),
                            fmt::format("{}: {} uses {} ({}), which this exercise forbids (\"{}\"): {}", where,
                                        function, describe_arithmetic(use.arithmetic), use.opcode,
                                        rules.arithmetic_words, advice(use.arithmetic, literal))});
    }
    return findings;
}

}  // namespace cugrade
