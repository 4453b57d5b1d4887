// The checker's own profile of a slow speed test: the submission's call replayed once per pass that the GPU's
// performance counters need (CUPTI's range profiler, each kernel launch a range), inside the process that timed it.
// It costs a few calls' time, where a separate Nsight Compute process costs seconds of start and replays; the metrics
// are the ones Nsight Compute reports under the same names (profile_metrics.hpp). CUPTI is loaded at run time from
// the path the grader names: a toolkit without it profiles nothing, and says why.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launch_shape.hpp"
#include "profiled_launch.hpp"

namespace cugrade::harness {

// Where a profile's work on the GPU runs: attaching the profiler to the context, configuring it, the passes, reading
// and detaching it (and reading which counters are free, on a GPU this CUPTI does not know). All of it needs the GPU
// to itself: the passes so that the counters see the submission's kernels and nobody else's, and the rest because
// another process's kernel that faults meanwhile breaks the counters (CUPTI_ERROR_UNKNOWN, for every later profile of
// the process too; scripts/counters-start.sh). CUPTI's host work (the metrics' configuration, evaluating the
// counters) runs outside it.
using GpuStep = std::function<void(const std::function<void()>&)>;
inline void run_here(const std::function<void()>& step) { step(); }

// What a profile replays.
struct ProfiledCall {
    std::function<void()> prepare;                       // before each pass, outside the counted span
    std::function<void()> call;                          // one call: the same launches on the same inputs each time
    std::function<std::vector<LaunchShape>()> launches;  // the kernels the last call launched
    // How many kernels a call launched when last seen (0: not known). A pass keeps a few ranges more than that:
    // CUPTI's first Start after attaching is CPU work that grows with them: 0.2-0.3 s for 16 ranges, 0.4 s for 256
    // on an H200 (scripts/counters-start.sh), paid again at every attach.
    std::size_t expected_launches = 0;
    // One small launch of the checker's own, profiled through every pass before the call is: the first Start after
    // attaching costs 0.2-0.4 s and the later ones a few ms, so the call's passes pay only the latter (and its time is
    // told apart from theirs).
    std::function<void()> warm_up;
};

class CounterProfiler {
public:
    // Loads CUPTI from `library` and sets up the counters for the current context. Throws std::runtime_error with
    // the reason ("the GPU's counters are reserved for administrators", "CUPTI ... was not found").
    explicit CounterProfiler(const std::string& library, const GpuStep& on_gpu = run_here);
    ~CounterProfiler();
    CounterProfiler(const CounterProfiler&) = delete;
    CounterProfiler& operator=(const CounterProfiler&) = delete;

    // Runs the call once per pass, its `prepare` before each, then asks for the kernels the last call launched: each
    // is matched to its range by its count of blocks and warps, and ranges of no launch of the call's (a memset the
    // driver runs as a kernel) are left out. Throws std::runtime_error.
    std::vector<ProfiledLaunch> profile(const ProfiledCall& call, const GpuStep& on_gpu = run_here);

    // Keeps the range profiler attached after a profile, so that the next profile in this context pays no CUPTI
    // start (0.2-0.4 s of CPU work an attach, about 0.07 s a profile after it). Only while no other context on the GPU
    // can fault: a fault elsewhere breaks an attached profiler, and this context with it (scripts/counters-start.sh).
    // A profile that fails detaches.
    void keep_attached(bool keep);
    void detach(const GpuStep& on_gpu = run_here);

    int passes() const;
    // Seconds each step took when last run: "availability" and "host setup" (the constructor's), then the
    // profile's "enable", "warm-up", "passes", "decode", "disable" and "evaluate". What a profile costs is told
    // from these (scripts/trace_summary.py).
    const std::map<std::string, double>& step_seconds() const;

private:
    struct State;
    std::unique_ptr<State> state_;
};

// The launch metrics of `launch` on the current device (profile_metrics::launch).
std::map<std::string, double> launch_metrics(const LaunchShape& launch);

}  // namespace cugrade::harness
