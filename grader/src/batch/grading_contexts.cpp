#include "batch/grading_contexts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <set>

#include "run/case_runner.hpp"
#include "schedule/checker_pool.hpp"
#include "schedule/counters_rounds.hpp"
#include "base/error.hpp"
#include "schedule/gpu_gate.hpp"
#include "base/parallel.hpp"
#include "schedule/same_code_profiles.hpp"

namespace cugrade {
namespace {

// What one GPU's share of a batch may hold at once: the largest cases of a speed test (their inputs, copies to check
// them against, the L2 flush) take a few GiB, so a GPU grades no more submissions at once than 8 GiB each allows. A
// class of sum, minmax and transpose held at most 50.4 GiB of an H200's memory with 12 students at once, 63.5 GiB
// with 16, and 42.2 GiB with 8 once each harness kept its buffers in a pool (its peak held until it ends): an 80 GiB
// H100 takes 8 at once, as an H200 does.
constexpr std::uint64_t gpu_bytes_per_place = std::uint64_t{8} << 30;

// A batch's worker leaves a profile out after this long, rather than hold its share of the GPU idle.
constexpr double batch_profile_wait_seconds = 5.0;

// Submissions one kept checker serves before it ends (checker_pool.hpp).
constexpr int kept_checker_jobs = 16;
// The longest a slow speed test waits for others of its exercise to share its round of profiles: a checker's first
// profile costs CUPTI's start (about 0.5 s of the GPU alone), each later one in the same round about 0.17 s.
constexpr std::chrono::seconds counters_round_wait{60};

// Without a GPU: `jobs` contexts like `base`, grading only reads builds and inspects them.
std::vector<GradingContext> cpu_contexts(const GradingContext& base, const BatchOptions& options, unsigned jobs) {
    if (!options.gpus.empty()) {
        throw UsageError(fmt::format("--gpus: {}", base.gpu.unavailable_reason));
    }
    std::vector<GradingContext> contexts(jobs, base);
    for (auto& context : contexts) {
        context.concurrent_jobs = jobs;
    }
    return contexts;
}

// The GPUs `options.gpus` names, else every GPU CUDA shows that can be graded on; of one kind.
std::vector<GpuInfo> chosen_gpus(const BatchOptions& options) {
    std::string reason;
    const std::vector<GpuInfo> visible = probe_gpus(reason);
    std::vector<GpuInfo> chosen;
    if (options.gpus.empty()) {
        std::copy_if(visible.begin(), visible.end(), std::back_inserter(chosen),
                     [](const GpuInfo& gpu) { return gpu.available; });
    }
    for (const int index : options.gpus) {
        if (index < 0 || index >= static_cast<int>(visible.size()) || !visible[index].available) {
            throw UsageError(fmt::format("--gpus {}: this machine shows {} GPU{} (numbered from 0)", index,
                                         visible.size(), visible.size() == 1 ? "" : "s"));
        }
        if (std::none_of(chosen.begin(), chosen.end(), [&](const GpuInfo& gpu) { return gpu.index == index; })) {
            chosen.push_back(visible[index]);
        }
    }
    if (chosen.empty()) {
        throw std::runtime_error(fmt::format("no GPU to grade on: {}", reason));
    }
    for (const auto& gpu : chosen) {
        if (gpu.name != chosen.front().name) {
            throw UsageError(
                fmt::format("--gpus: GPU {} is an {} and GPU {} an {}; speed is graded against one kind of "
                            "GPU, so choose GPUs of one kind",
                            chosen.front().index, chosen.front().name, gpu.index, gpu.name));
        }
    }
    return chosen;
}

// Whether each context names its GPU to the harness; throws where a GPU it must name has no UUID.
bool names_each_gpu(const std::vector<GpuInfo>& chosen) {
    // The harness finds its GPU by UUID in CUDA_VISIBLE_DEVICES, unless it is the one CUDA shows first anyway.
    const bool name_each = chosen.size() > 1 || chosen.front().index != 0;
    for (const auto& gpu : chosen) {
        if (name_each && gpu.uuid.empty()) {
            throw std::runtime_error(fmt::format(
                "the NVIDIA driver gives no UUID for GPU {}, so cugrade cannot send work to it alone; grade on GPU 0",
                gpu.index));
        }
    }
    return name_each;
}

// Submissions graded at once on each GPU: `options.gpu_jobs`, else as many as the cores and the GPU's memory allow.
unsigned submissions_per_gpu(const BatchOptions& options, const std::vector<GpuInfo>& chosen) {
    const unsigned cores = usable_cores();
    unsigned per_gpu = options.gpu_jobs;
    if (per_gpu == 0) {
        // A submission's cases keep about two cores busy (the checker and the submission's runner).
        per_gpu = std::clamp<unsigned>(cores / 2 / static_cast<unsigned>(chosen.size()), 1, 8);
        if (chosen.front().total_memory_bytes > 0) {
            per_gpu = std::clamp<unsigned>(
                static_cast<unsigned>(chosen.front().total_memory_bytes / gpu_bytes_per_place), 1, per_gpu);
        }
    }
    return per_gpu;
}

// The workers of one GPU: sharing its gate, its kept checkers, its rounds of profiles and the profiles of code read.
std::vector<GradingContext> gpu_workers(const GradingContext& base, const GpuInfo& gpu, unsigned per_gpu,
                                        std::size_t gpu_count, bool name_each) {
    // Four times as many workers as places: a submission whose case waits for a quiet GPU (a kernel that seems to
    // hang while a speed test waits), or whose slow speed test waits for a round of profiles, gives its place to
    // another meanwhile, and a place's worth of each of those may wait at once beside the places.
    const auto gate = per_gpu > 1 ? std::make_shared<GpuGate>(GpuGate::default_patience, per_gpu) : nullptr;
    const unsigned workers = gate ? 4 * per_gpu : per_gpu;
    // Three times as many kept checkers wait between submissions as are graded at once (a race check and a
    // memory check each, and a wrong answer's reruns for about a third of them); each serves at most
    // kept_checker_jobs submissions (its CPU time adds up against the rubric's limit for one).
    const auto pool = std::make_shared<CheckerPool>(gate, 3 * per_gpu, kept_checker_jobs);
    const auto profiles = std::make_shared<SameCodeProfiles>();
    // Slow speed tests profiled in rounds of an exercise's, as many as places, none waiting longer than
    // counters_round_wait for the others (counters_rounds.hpp).
    const auto rounds = gate ? std::make_shared<CountersRounds>(gate.get(), per_gpu, counters_round_wait,
                                                                &CaseRunner::run_counters_round)
                             : nullptr;
    std::vector<GradingContext> contexts;
    for (unsigned j = 0; j < workers; ++j) {
        GradingContext context = base;
        context.gpu = gpu;
        context.gpu_gate = gate;
        context.checker_pool = pool;
        context.same_code_profiles = profiles;
        context.counters_rounds = rounds;
        context.holds_gpu_place = gate != nullptr;
        context.gpu_device = name_each ? gpu.uuid : "";
        context.profile_wait_seconds = batch_profile_wait_seconds;
        context.concurrent_jobs = workers * static_cast<unsigned>(gpu_count);
        contexts.push_back(std::move(context));
    }
    return contexts;
}

}  // namespace

std::vector<GradingContext> gpu_contexts(const GradingContext& base, const BatchOptions& options, unsigned jobs) {
    if (!base.gpu.available) {
        return cpu_contexts(base, options, jobs);
    }
    const std::vector<GpuInfo> chosen = chosen_gpus(options);
    const bool name_each = names_each_gpu(chosen);
    const unsigned per_gpu = submissions_per_gpu(options, chosen);
    std::vector<GradingContext> contexts;
    for (const auto& gpu : chosen) {
        std::vector<GradingContext> workers = gpu_workers(base, gpu, per_gpu, chosen.size(), name_each);
        std::move(workers.begin(), workers.end(), std::back_inserter(contexts));
    }
    return contexts;
}

unsigned submissions_at_once(const std::vector<GradingContext>& contexts) {
    unsigned at_once = 0;
    std::set<const GpuGate*> gates;
    for (const auto& context : contexts) {
        if (!context.holds_gpu_place) {
            ++at_once;
        } else if (gates.insert(context.gpu_gate.get()).second) {
            at_once += context.gpu_gate->places();
        }
    }
    return at_once;
}

}  // namespace cugrade
