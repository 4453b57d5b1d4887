// The rules an exercise's contract states about a submission's code, as exercise.yaml's `rules` gives them, checked
// where the code can prove them: its machine code (arithmetic), what it included (libraries) and what its host code
// does with the exercise's buffers (host copies). docs/authoring.md, "The contract's rules", is the vocabulary.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace cugrade {

// A kind of arithmetic a contract may refuse, each recognised by the instructions it compiles to.
enum class ArithmeticClass {
    fp64,         // double-precision arithmetic
    float_mma,    // tensor-core matrix multiply-accumulate on TF32, FP16 or BF16 (and FP64 or FP8) operands
    integer_mma,  // tensor-core matrix multiply-accumulate on integers
    packed_half,  // half or bfloat16 arithmetic, packed or not
};

// As exercise.yaml names it ("fp64") and as a sentence says it ("double-precision arithmetic"): one place for both.
const std::vector<ArithmeticClass>& arithmetic_classes();
std::string arithmetic_key(ArithmeticClass arithmetic);
std::string describe_arithmetic(ArithmeticClass arithmetic);

struct ContractRules {
    // Arithmetic the submission's own device code may not contain, and the contract's words for the rule.
    std::set<ArithmeticClass> refused_arithmetic;
    std::string arithmetic_words;
    // The libraries (api_policy.hpp's names: "cub") the submission may use; every other known library is refused.
    std::vector<std::string> allowed_libraries;
    std::string libraries_words;
    // Whether its host code may copy the exercise's buffers to or from the host.
    bool host_copies_refused = false;
    std::string host_copies_words;
};

}  // namespace cugrade
