// The shape of every case: the submission's calls, each on freshly poisoned outputs and checked; then, for the speed
// test, the reference checked once, and both timed in pairs (timing.cuh) on inputs drawn again before every timed
// pair, every timed output of the submission checked. An exercise's harness says what a call is
// and how to check it (CaseCalls); run_calls does the rest.
#pragma once

#include <cuda_runtime.h>

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "case_outcome.hpp"
#include "case_plan.hpp"
#include "channel.hpp"
#include "cuda_check.cuh"
#include "explanation.hpp"
#include "guarded_buffer.cuh"
#include "protocol.hpp"
#ifndef CUGRADE_CPU
#include "checker_counters.hpp"
#include "counter_profile.hpp"
#endif
#include "remote_submission.hpp"
#include "run_mode.hpp"
#include "seeded_input.cuh"
#include "speed_metric.hpp"
#include "statistics.hpp"
#include "timing.cuh"

namespace cugrade::harness {

// What a check found wrong with a call's outputs, and what the wrong answer is when the exercise can tell.
struct Problem {
    std::string detail;  // empty: nothing wrong
    std::optional<Explanation> explanation = std::nullopt;
};

class Stream {
public:
    Stream() { CUGRADE_CUDA_CHECK(cudaStreamCreate(&stream_)); }
    ~Stream() { cudaStreamDestroy(stream_); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    operator cudaStream_t() const { return stream_; }

private:
    cudaStream_t stream_{};
};

// What an exercise's harness hands run_calls for one case. `Signature` is the entry point's type (decltype(sum));
// the submission's side is wired here, the reference is the one CUGRADE_REFERENCE declared.
template <class Signature>
struct CaseCalls {
    using EntryPoint = Entry<Signature>;

    CaseCalls(Signature* reference_entry, SeededInputs& seeded, std::vector<std::string> names)
        : submission(submission_entry<Signature>()),
          reference(reference_entry),
          inputs(&seeded),
          input_names(std::move(names)) {}

    EntryPoint submission;
    EntryPoint reference;
    SeededInputs* inputs;                  // read-only to the calls: unchanged after every call; a set per variant
    std::vector<std::string> input_names;  // one per operand, as messages name them: "input", "matrix b"
    std::function<void(EntryPoint, cudaStream_t, int set)> invoke;  // calls an entry point on input set `set`
    std::function<std::string(int set)> check;                      // what is wrong with the outputs, or ""
    // After a failed check: what the wrong answer is, where the exercise can tell (explanation.hpp). May be empty.
    std::function<std::optional<Explanation>(int set)> explain;
    std::vector<GuardedBuffer*> outputs;  // outputs and scratch: poisoned before every call, nothing past their ends
    double bytes = 0.0;                   // what the exercise must move at least
    Measurements measurements;
};

// What `work` returns, a CUDA failure in it blamed on `which_call`: a call's launches are refused at once, but its
// kernels' faults surface at the first wait after them, whatever that wait was for.
template <class Work>
decltype(auto) blamed_on(const std::string& which_call, Work&& work) {
    try {
        return work();
    } catch (const CudaFailure& e) {
        throw CudaFailure(e.code, e.what(), which_call);
    }
}

// Makes a call of the submission's without waiting for it: the first wait after it, blamed on the call too, answers
// for its kernels. Each wait is a turn among the processes that share the GPU, so a call and the work queued behind
// it (the reading of its footprint) are waited for once.
template <class Call>
void launch_submission(Call&& call, const std::string& which_call) {
    submission_has_run() = true;
    blamed_on(which_call, [&] {
        call();
        CUGRADE_CUDA_CHECK(cudaGetLastError());
    });
}

template <class Call>
void call_submission(Call&& call, const std::string& which_call) {
    launch_submission(std::forward<Call>(call), which_call);
    blamed_on(which_call, [] { CUGRADE_CUDA_CHECK(cudaDeviceSynchronize()); });
}

// What is wrong with the state a call left behind, before its results are even read: writes outside the outputs,
// then changes to the inputs of its set. `footprint` has a slot for each output and operand; all is read at once.
template <class Signature>
std::string broken_contract(const CaseCalls<Signature>& calls, const InputSnapshot& inputs, int set,
                            CallFootprint& footprint) {
    // A profiled run takes no snapshot of its inputs: it grades nothing.
    const std::size_t operands = inputs.size() == 0 ? 0 : calls.inputs->operands();
    footprint.clear();
    footprint.count_guard_writes(calls.outputs);
    for (std::size_t k = 0; k < operands; ++k) {
        inputs.find_change(static_cast<std::size_t>(set) * operands + k, footprint.first_change(k));
    }
    const std::vector<unsigned long long> found = footprint.read();
    for (std::size_t i = 0; i < calls.outputs.size(); ++i) {
        if (std::string overrun = calls.outputs[i]->overrun(found[2 * i], found[2 * i + 1]); !overrun.empty()) {
            return overrun;
        }
    }
    for (std::size_t k = 0; k < operands; ++k) {
        const std::size_t which = static_cast<std::size_t>(set) * operands + k;
        if (std::string changed = inputs.changed(which, found[2 * calls.outputs.size() + k]); !changed.empty()) {
            return changed;
        }
    }
    return "";
}

#ifndef CUGRADE_CPU
// The longest a profile may hold the GPU alone, all its passes together: a call slower than that is not profiled.
inline constexpr double profile_budget_ms = 2000.0;

// The checker's own launch that a profile starts the counters on, before the submission's (ProfiledCall::warm_up).
static __global__ void counters_warm_up() {}

// The counters of the submission's call on a slow speed test, made in this process (counter_profile.hpp) in the
// machine's `turn` at them, or why not, or that the grader wants no profile. `prepare` poisons the outputs, `call`
// makes one call.
inline KernelProfile profile_slow_call(const CountersTurn& turn, const std::function<void()>& prepare,
                                       const std::function<void()>& call, double call_ms) {
    if (turn.unwanted()) {
        KernelProfile unwanted;
        unwanted.unwanted = true;
        return unwanted;
    }
    if (!turn.granted()) {
        KernelProfile refused =
            KernelProfile::none("other profiles held the GPU's counters (they take turns on a machine)");
        refused.turn_refused = true;
        return refused;
    }
    CheckerCounters& counters = checker_counters();
    if (!set_up_checker_counters()) {
        return KernelProfile::none(counters.unavailable);
    }
    // Setting up is counted once, by the first profile after it.
    const double setup_seconds = std::exchange(counters.setup_seconds, 0.0);
    CounterProfiler* profiler = counters.profiler.get();
    double waited = 0.0;
    const int passes = profiler->passes();
    if (call_ms * passes > profile_budget_ms) {
        return KernelProfile::none("each call takes " + std::to_string(static_cast<int>(call_ms)) + " ms, and the " +
                                   std::to_string(passes) + " passes of a profile would hold the GPU too long");
    }
    try {
        const auto profiling = std::chrono::steady_clock::now();
        // The counters' work on the GPU has it alone, in one turn (counter_profile.hpp says why).
        const GpuStep alone = alone_step(waited);
        ProfiledCall profiled;
        profiled.prepare = prepare;
        profiled.call = call;
        profiled.launches = [] { return remote_submission()->last_launches(); };
        profiled.expected_launches = remote_submission()->last_launches().size();
        profiled.warm_up = [] {
            counters_warm_up<<<1, 32>>>();
            CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
        };
        KernelProfile made;
        made.launches = profiler->profile(profiled, alone);
        // How long the setup and the profile took: the grader counts it as the diagnosis's.
        made.passes = passes;
        made.setup_seconds = setup_seconds;
        made.seconds = seconds_since(profiling) - waited;
        made.steps = profiler->step_seconds();
        return made;
    } catch (const std::exception& e) {
        // The passes ran the submission's calls: what failed may have left the context broken for the next case.
        KernelProfile failed = KernelProfile::none(e.what());
        failed.after_calls = true;
        return failed;
    }
}
#endif

template <class Signature>
CaseOutcome run_checked_calls(const plan::Case& c, const CaseCalls<Signature>& calls) {
    Stream stream;
    InputSnapshot inputs;
    SeededInputs& seeded = *calls.inputs;
    const int sets = seeded.sets();
    CallFootprint footprint(calls.outputs.size(), seeded.operands());
    if (!profile_only()) {
        SharedGpu gpu;
        for (int set = 0; set < sets; ++set) {
            for (std::size_t k = 0; k < seeded.operands(); ++k) {
                inputs.add(seeded.buffer(set, k), k < calls.input_names.size() ? calls.input_names[k] : "input");
            }
        }
    }
    if (remote_submission()) {
        std::vector<replay::DeviceRange> ranges;
        for (int set = 0; set < sets; ++set) {
            for (std::size_t k = 0; k < seeded.operands(); ++k) {
                const DeviceBuffer<float>& input = seeded.buffer(set, k);
                ranges.push_back({reinterpret_cast<std::uintptr_t>(input.get()), input.size() * sizeof(float), false});
            }
        }
        for (const auto* output : calls.outputs) {
            ranges.push_back({reinterpret_cast<std::uintptr_t>(output->get()), output->size() * sizeof(float), true});
        }
        remote_submission()->set_ranges(std::move(ranges));
    }
    const auto poison_outputs = [&] {
        for (GuardedBuffer* output : calls.outputs) {
            output->poison_all();
        }
    };
    // With the GPU alone a wait costs no turn among processes, and what follows must find the GPU idle: a timed
    // call's stream hold and clock, a profile's start of its counters.
    const auto poison_outputs_and_wait = [&] {
        poison_outputs();
        CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
    };
    const auto checked_call = [&](const typename CaseCalls<Signature>::EntryPoint& entry, int set,
                                  const std::string& which) -> Problem {
        SharedGpu gpu;
        poison_outputs();
        const bool profiled = profile_only() && &entry == &calls.submission;
        {
            // Profiled, the submission's kernels run with the GPU and its performance counters to themselves: no
            // other submission's work between the profiler's replays, and no other profile.
            std::optional<GpuAlone> profiled_alone;
            if (profiled) {
                profiled_alone.emplace();
                nvtxRangePushA(submission_range);
            }
            if (profiled) {
                call_submission([&] { calls.invoke(entry, stream, set); }, which);
                nvtxRangePop();
            } else {
                launch_submission([&] { calls.invoke(entry, stream, set); }, which);
            }
        }
        // The footprint's work goes on the legacy default stream, which waits for the call's (a blocking stream).
        if (std::string broken = blamed_on(which, [&] { return broken_contract(calls, inputs, set, footprint); });
            !broken.empty()) {
            return {which + ": " + broken};
        }
        std::string wrong = calls.check(set);
        if (wrong.empty()) {
            return {};
        }
        std::optional<Explanation> explanation;
        try {
            explanation = calls.explain ? calls.explain(set) : std::nullopt;
        } catch (const std::exception&) {
            // An explanation that cannot be made leaves the wrong answer as it is, with its detail.
        }
        return {which + ": " + wrong, std::move(explanation)};
    };
    // Profiled, one call shows the submission's kernels; each further call would repeat them.
    const int call_count = profile_only() ? 1 : c.calls;
    for (int call = 1; call <= call_count; ++call) {
        const std::string which = "call " + std::to_string(call) + " of " + std::to_string(call_count);
        if (Problem problem = checked_call(calls.submission, 0, which); !problem.detail.empty()) {
            return CaseOutcome::wrong_answer(std::move(problem.detail), std::move(problem.explanation));
        }
    }
#ifndef CUGRADE_CPU
    if (c.timed && counters_round()) {
        // A round of profiles (run_mode.hpp): the call was timed in the submission's own run; checked above, it is
        // profiled now, in the round's turn at the GPU alone and the counters.
        const CountersTurn turn(CountersTurn::Ask::round);
        CaseOutcome outcome = CaseOutcome::passed({});
        outcome.kernel_profile = profile_slow_call(
            turn, poison_outputs_and_wait,
            [&] { call_submission([&] { calls.invoke(calls.submission, stream, 0); }, "the profiled call"); },
            counters_round_call_ms());
        outcome.fresh_process_after = outcome.kernel_profile->after_calls;
        return outcome;
    }
#endif
    Measurements measurements = calls.measurements;
    if (c.timed && !profile_only()) {
        if (Problem problem = checked_call(calls.reference, 0, "the reference's call"); !problem.detail.empty()) {
            return {protocol::status_harness_error, std::move(problem.detail)};
        }
        SampleTimer timer;
        CopyProbe copy(calls.bytes);
        const NvmlReader nvml;  // loaded now, CPU work, before the GPU is the speed test's alone
#ifndef CUGRADE_CPU
        const bool may_profile =
            !c.timing.boundaries.empty() && !counter_profiler_library().empty() && remote_submission() != nullptr;
        if (may_profile) {
            set_up_checker_counters();
        }
#endif
        std::optional<GpuAlone> alone(std::in_place);  // nobody else's cases on the GPU while the clocks run
        SpeedResult speed;
        try {
            submission_has_run() = true;
            SpeedCalls speed_calls;
            speed_calls.time_call = [&](bool submission, int set) {
                poison_outputs_and_wait();
                if (submission && remote_submission()) {
                    // Captured before the clock starts; the timed call replays it.
                    remote_submission()->set_capture_only(true);
                    calls.invoke(calls.submission, stream, set);
                    remote_submission()->set_capture_only(false);
                }
                return timer.time_ms(
                    stream, [&] { calls.invoke(submission ? calls.submission : calls.reference, stream, set); });
            };
            speed_calls.check = [&](int set) {
                if (std::string problem = broken_contract(calls, inputs, set, footprint); !problem.empty()) {
                    return problem;
                }
                return calls.check(set);
            };
            speed_calls.fresh_input = [&](int set) {
                seeded.redraw(set);
                for (std::size_t k = 0; k < seeded.operands(); ++k) {
                    inputs.retake(static_cast<std::size_t>(set) * seeded.operands() + k);
                }
                CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
            };
            const std::uint64_t order_seed = c.inputs.empty() ? 0 : c.inputs.front().seed;
            speed = measure_speed(c.timing, {stream, timer, copy, sets, calls.bytes, order_seed, nvml}, speed_calls);
        } catch (const CudaFailure& e) {
            // The reference passed its own check before timing, so the submission's calls are the ones to blame.
            throw CudaFailure(e.code, e.what(), "while timing");
        }
        // A submission that is fast because it is wrong earns nothing.
        if (!speed.problem.empty()) {
            return CaseOutcome::wrong_answer(speed.problem);
        }
        measurements.set("submission_ms", statistics::median(speed.submission_ms));
        measurements.set("reference_ms", statistics::median(speed.reference_ms));
        measurements.set("submission_rse", statistics::median_relative_error(speed.submission_ms));
        measurements.set("reference_rse", statistics::median_relative_error(speed.reference_ms));
        measurements.set("samples", speed.submission_ms.size());
        measurements.set("dropped_throttled", speed.dropped_throttled);
        measurements.set("sm_clock_mhz", statistics::median(speed.clock_mhz));
        measurements.set("copy_gbps", speed.copy_gbps);
        measurements.set("remeasured", speed.remeasured);
        measurements.set("near_boundary", speed.near_boundary);
        measurements.set("bytes", calls.bytes);
        measurements.set("inputs", sets);
        if (speed.conditions.known) {
            measurements.set("gpu_sm_clock_mhz", speed.conditions.sm_clock_mhz);
            measurements.set("gpu_temperature_c", speed.conditions.temperature_c);
            measurements.set("gpu_clock_event_reasons", static_cast<std::uint64_t>(speed.conditions.reasons));
            measurements.set("gpu_throttled", gpu_conditions::throttled(speed.conditions.reasons));
        }
        measurements.set("throttled_remeasured", speed.conditions.remeasured);
#ifndef CUGRADE_CPU
        // Below the top tier, the diagnosis will want to know why: the counters are read now, in this process,
        // while the submission's work is at hand. The grader's scoring decides the tier; this only saves asking.
        const double submission_ms = statistics::median(speed.submission_ms);
        const speed::Figures figures =
            speed::figures(submission_ms, statistics::median(speed.reference_ms), calls.bytes, speed.copy_gbps);
        const bool top_tier =
            c.timing.boundaries.empty() ||
            speed::reaches(c.timing.metric, speed::metric_value(c.timing.metric, figures), c.timing.boundaries.front());
        if (!top_tier && may_profile) {
            // Made in the speed test's turn at the GPU alone when no other profile has the counters: the GPU is
            // emptied for both once. Otherwise the turn is given up while this one waits for the counters' turn.
            std::optional<CountersTurn> turn(std::in_place, CountersTurn::Ask::if_free);
            if (!turn->granted() && !turn->unwanted()) {
                turn.reset();
                alone.reset();
                turn.emplace(CountersTurn::Ask::waiting);
            }
            CaseOutcome outcome = CaseOutcome::passed(std::move(measurements));
            outcome.kernel_profile = profile_slow_call(
                *turn, poison_outputs_and_wait,
                [&] { call_submission([&] { calls.invoke(calls.submission, stream, 0); }, "the profiled call"); },
                submission_ms);
            // A profile that failed in the submission's calls must not fail the cases after it: they start afresh.
            outcome.fresh_process_after = outcome.kernel_profile->after_calls;
            return outcome;
        }
#endif
    }
    return CaseOutcome::passed(std::move(measurements));
}

template <class Signature>
bool wrote_past_outputs(const CaseCalls<Signature>& calls) {
    CallFootprint footprint(calls.outputs.size(), 0);
    footprint.clear();
    footprint.count_guard_writes(calls.outputs);
    const std::vector<unsigned long long> found = footprint.read();
    return std::any_of(found.begin(), found.end(), [](unsigned long long written) { return written > 0; });
}

template <class Signature>
CaseOutcome run_calls(const plan::Case& c, const CaseCalls<Signature>& calls) {
    CaseOutcome outcome = run_checked_calls(c, calls);
    outcome.fresh_process_after =
        outcome.fresh_process_after || (outcome.status != protocol::status_passed && wrote_past_outputs(calls));
    return outcome;
}

}  // namespace cugrade::harness
