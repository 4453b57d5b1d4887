// Why points were lost, in words a student can act on. A diagnosis names a cause and shows the evidence; what a
// student is shown of it never names a hidden case, its size or its input.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cugrade {

struct Diagnosis {
    // "pattern": what the failing cases share; "answer": what the harness found the wrong answer to be;
    // "memory": compute-sanitizer memcheck; "uninitialized": initcheck; "barrier": synccheck; "race": racecheck;
    // "speed": Nsight Compute's profile of a slow speed test.
    std::string kind;
    std::string summary;                // one line: the cause, where it is, with nothing of the case's size or input
    std::string scope;                  // how many cases show it: "9 of 12 visible cases"; or the case it was found on
    std::vector<std::string> evidence;  // what shows it: the visible cases, or the tool's facts (thread, address)
    std::string hint;                   // what usually causes it and where the student README teaches the fix
    std::string tool_output = {};       // the tool's own report of it, as printed
    // The cause in the same words for every submission it fits, for a class's counts: "uncoalesced global stores",
    // "an out-of-bounds write in global memory (memcheck)"; a pattern's is its summary.
    std::string category = {};
    // What the fix is about, one of diagnosis_topics: an exercise.yaml's `readme_sections` names the README section
    // that teaches it, and the hint points there.
    std::string topic = {};
    // A picture of where a matrix's wrong elements lie, a line per row of cells (explanation.hpp draws it).
    std::vector<std::string> map = {};
};

// Whether a case's diagnosis names a cause, so that no rerun need look for one: a diagnosis that only describes (where
// a matrix's wrong elements lie) has no category.
inline bool names_cause(const std::optional<Diagnosis>& diagnosis) { return diagnosis && !diagnosis->category.empty(); }

// The topics a diagnosis can have, each with what it covers.
inline const std::vector<std::pair<std::string, std::string>> diagnosis_topics = {
    {"state", "state left on the device by one call: counters and flags to reset"},
    {"bounds", "the last, partial block or tile; reads and writes past the end of an array"},
    {"grid", "the grid's size: ceiling division, grid-stride loops, enough blocks for every SM"},
    {"combine", "combining the blocks' results: each block's total, and what the blocks before it add up to"},
    {"indexing", "rows and columns in an index, a bound or the grid"},
    {"inputs", "values that only some inputs bring out: signs, zeros, a starting value"},
    {"parameter", "one setting of an exercise parameter, such as an exclusive scan"},
    {"shared_memory", "indices into __shared__ arrays"},
    {"alignment", "vector loads and stores at aligned addresses"},
    {"scratch", "scratch memory: what to set before a kernel reads it"},
    {"barrier", "__syncthreads() that every thread of the block reaches"},
    {"atomics", "atomics: how many, and on how many addresses"},
    {"coalescing", "coalesced loads and stores: consecutive threads, consecutive addresses"},
    {"bank_conflicts", "shared-memory bank conflicts and padding"},
    {"divergence", "warps whose threads take different branches"},
    {"occupancy", "registers, shared memory and block size against the warps an SM holds"},
    {"vector_loads", "wide (16-byte) loads and several loads in flight per thread"},
    {"traffic", "bytes moved: each input read once and each output written once"},
    {"launches", "how many kernel launches a call makes"},
};

}  // namespace cugrade
