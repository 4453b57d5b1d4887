// The contract's arithmetic rule (contract_rules.hpp), checked in the submission's own machine code: each kernel's and
// device function's instructions, as `nvdisasm -gi` lists the cubin that `cuobjdump -xelf` takes out of its object,
// with the line of the submission's file each comes from. docs/rubric.md lists which instructions make each class,
// and those that are allowed (conversions, the compiler's move-a-constant HFMA2).
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "course/contract_rules.hpp"
#include "inspect/inspect.hpp"
#include "course/submission.hpp"

namespace cugrade {

// The class of arithmetic a SASS instruction does, its modifiers and operands given ("DADD R2, R6, R2",
// "HFMA2.MMA R5, -RZ, RZ, 2, 0"); nothing for any other instruction, and for conversions and moves.
std::optional<ArithmeticClass> arithmetic_of(const std::string& instruction);

// The first instruction of a class in one function.
struct ArithmeticUse {
    std::string function;  // as the listing names it: mangled ("_Z10sum_kernelPKfPfi")
    ArithmeticClass arithmetic;
    std::string opcode;  // without modifiers: "DADD"
    int line = 0;        // in the submission's file; 0 when no line of it leads to the instruction
    // Every line of the submission's file that the function's code comes from: the compiler moves instructions
    // between the lines of a loop, so the line of a stray literal may be one of these rather than `line`.
    std::set<int> function_lines;
};

// Of an `nvdisasm -gi` listing: the first use of each class in each function, in the order of the listing, with the
// line of `submission_file` (a file name: "sum.cu") that it is, or that inlined it.
std::vector<ArithmeticUse> read_arithmetic(const std::string& listing, const std::string& submission_file);

// The findings (rule "arithmetic") of `object` (the submission's own, as compiled) under `rules`: none when the rule
// refuses nothing, or when the toolkit has no cuobjdump or no nvdisasm beside it to read machine code with.
// `submission` gives the file's text, its name as compiled and as the user gave it.
std::vector<Finding> check_arithmetic(const std::filesystem::path& object, const SubmissionFile& submission,
                                      const ContractRules& rules, const std::string& cuobjdump);

}  // namespace cugrade
