// Nsight Compute's view of a submission's kernels in the speed test, turned into what most likely slows them down:
// the profiler's command, its report read back, and the hints.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnosis.hpp"

namespace cugrade {

// One launch of one of the submission's kernels, as ncu measured it: its metrics by name ("gpu__time_duration.sum"),
// in the base units (ns, bytes).
struct KernelProfile {
    std::string name;  // without its parameters
    std::map<std::string, double> metrics;

    double metric(const std::string& name) const;  // 0 when absent
};

// ncu profiling the kernels inside the harness's "submission" NVTX ranges, the GPU's clocks left as they are, its
// report in CSV to `report_file`; the program and its arguments follow.
std::vector<std::string> profiler_command(const std::string& ncu, const std::filesystem::path& report_file);

// The launches in ncu's `--csv --page raw` report; throws std::runtime_error when it is not one.
std::vector<KernelProfile> read_profile(const std::string& csv);

// The launches the harness profiled itself ([{"name": ..., "metrics": {name: value}}], counter_profile.hpp); throws
// std::runtime_error when `launches` is not that.
std::vector<KernelProfile> read_counter_profile(const nlohmann::json& launches);

// The launches' metrics as text, a kernel a line, for the diagnosis's tool output.
std::string describe_profile(const std::vector<KernelProfile>& launches);

// What the speed test measured beside the profile.
// The widest global load and store of one thread in a kernel's machine code, in bytes (0: none, or not known).
struct AccessWidths {
    int widest_load_bytes = 0;
    int widest_store_bytes = 0;
};
using KernelAccessWidths = std::map<std::string, AccessWidths>;  // by kernel name without its parameters

struct SpeedTestFigures {
    double elements = 0.0;                  // the case's size
    double copy_gbps = 0.0;                 // what a plain copy reached in the speed test (0: unknown)
    double minimum_bytes = 0.0;             // what the exercise must move at least (0: unknown)
    std::string source = "Nsight Compute";  // what measured the kernels, as the diagnosis names it
    // From the kernels' code (access_width.hpp), where the profile lacks the share of each sector used: a request's
    // sectors then say how much of them went unused.
    KernelAccessWidths access_widths;
};

// What the speed test's figures and the kernels' metrics say about why the submission is slow, the likeliest cause
// first: a grid that leaves SMs idle, an atomic per element, uncoalesced loads or stores, shared-memory bank
// conflicts, divergent warps, spilled registers, narrow loads, low occupancy and its limiter, more bytes than the
// exercise needs, many short launches; with the figure that shows each, and the bandwidth the kernels reach against
// the copy's. A kernel of under a tenth of the time, and a finding that explains under a twentieth of it, are left
// out. Nothing when no kernel ran.
std::optional<Diagnosis> speed_diagnosis(const std::vector<KernelProfile>& launches, const SpeedTestFigures& test);

}  // namespace cugrade
