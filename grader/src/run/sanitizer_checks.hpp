// The race and memory checks of a submission's cases under compute-sanitizer, and the reruns of its smallest
// failing case that diagnose it (run_cases runs them after the graded run, whose verdicts they add to).
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "run/case_runner.hpp"
#include "run/run.hpp"

namespace cugrade {

// The race-check cases under racecheck, once more, where the graded run gave them an answer, right or wrong (a case
// that crashed, faulted or timed out keeps its verdict, and does not run again): a hazard racecheck reports in a
// case fails it as a race; a case whose racecheck process ended before the harness reported it (past its limit, say)
// takes racecheck's verdict, which says so. Every other verdict stays the graded run's. In a batch checkers kept
// across submissions run them first: a case whose part of a job's output is whole is decided by it, the rest run in
// another kept job while each job decides one, then in a fresh racecheck.
void check_races(const std::filesystem::path& program, const std::vector<CasePlan>& cases,
                 const std::vector<std::size_t>& race_checked, const RunOptions& options, RunResult& result);

// The memory-check cases, once more under memcheck, with the graded run's buffers (guard regions after each output,
// which catch a write just past it; inputs allocated to their size, so that memcheck sees a read past their end): an
// access outside every allocation fails the case as memory_error where its result was right or wrong (a case that
// crashed, faulted, timed out or raced keeps its verdict, and does not run again). The cases of each visibility
// run together under one compute-sanitizer; the case that ended each reporting process is the one it reported, and
// the cases run again one at a time only where that cannot be told.
void check_memory(const std::filesystem::path& program, const std::vector<CasePlan>& cases,
                  const std::vector<std::size_t>& memory_checked, const RunOptions& options, RunResult& result);

// Where racecheck found a race, a wrong answer elsewhere may be its effect, whatever the answer looks like (a value
// no element holds is what a read before a write gives): the race is the cause each wrong answer's diagnosis names,
// and the harness's reading of the answer stays as evidence.
void put_races_first(const std::vector<CasePlan>& cases, RunResult& result);

// A failing case runs once more, alone, under compute-sanitizer, to find what went wrong: memcheck for a crash, a
// CUDA error or a wrong answer, then initcheck and synccheck for a wrong answer that memcheck does not explain. The
// smallest visible failing case whose wrong answer the harness did not explain is the one, since instrumented code
// runs many times slower and a student may see all of it; a hidden case only when no visible case fails. Its verdict
// stays that of the graded run: the diagnosis goes beside it, and what the reruns print goes nowhere. In a batch, a
// wrong answer's reruns under memcheck and synccheck first ask a kept checker whether the tool has anything to say.
void diagnose_failures(const std::filesystem::path& program, const std::vector<CasePlan>& cases,
                       const RunOptions& options, RunResult& result);

}  // namespace cugrade
