// compute-sanitizer's reports read back: the command for each of its tools, and the first error a tool found, in
// one line a student can act on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/diagnosis.hpp"

namespace cugrade {

enum class SanitizerTool { memcheck, initcheck, synccheck, racecheck };

std::string to_string(SanitizerTool tool);

// The exit code compute-sanitizer is asked to return when it finds an error.
inline constexpr int sanitizer_error_exit_code = 86;

// compute-sanitizer running `tool`, the program and its arguments to follow.
std::vector<std::string> sanitizer_command(const std::string& compute_sanitizer, SanitizerTool tool);

// What racecheck reported, as one line: the first hazard, or empty when none.
std::string first_race_report(const std::string& output);

// Whether compute-sanitizer printed anything but its banner: a line behind "=========" that says something (a report,
// a warning, a summary, a note that the program failed), whatever the tool. A program can print such a line too; that
// counts as well.
bool sanitizer_said_anything(const std::string& output);

// How many of its reports racecheck left out past its print limit, from the summary it prints as its program ends;
// nothing where there is no summary (the process was stopped, or its output cut).
std::optional<int> race_reports_left_out(const std::string& output);

// What usually causes an access outside the arrays in global memory, and its fix: one wording for memcheck's reports
// and the CPU self-check's memory faults (cpu_fault.cpp).
enum class StrayAccess { read, write, far };
std::string stray_access_hint(StrayAccess access);

// racecheck's first hazard as a diagnosis: the kind of race, the memory, the kernel, the two accesses' lines and
// which threads made them. Nothing when racecheck reported none.
std::optional<Diagnosis> race_diagnosis(const std::string& output);

// The first error `tool` reported, as a diagnosis: where (kernel, file:line), what (an out-of-bounds write of 4
// bytes, a read of memory nobody wrote, a barrier not every thread reaches) and the tool's facts (thread, block, how
// far outside the allocation). An error in one of `student_files` (file names, no folders) comes before one
// elsewhere; initcheck and synccheck count only those. Nothing when the tool found no error.
std::optional<Diagnosis> first_sanitizer_error(SanitizerTool tool, const std::string& output,
                                               const std::vector<std::string>& student_files);

}  // namespace cugrade
