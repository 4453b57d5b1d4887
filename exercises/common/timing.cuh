// Timing a submission against the reference so that the result means the same on every run:
//   - every kernel warmed up first (lazy module loading makes first launches slow);
//   - the L2 cache flushed before every sample (a read over twice its size) and persisting L2 lines reset;
//   - each sample one call, its start event on the harness's stream and its stop event on the legacy default
//     stream, which waits for work on every blocking stream: work the submission moved elsewhere is counted;
//   - the stream is held by a spinning kernel until the whole call is enqueued, so the host's delays in enqueuing
//     it (a loaded machine) are not the submission's time;
//   - submission and reference alternate on the same inputs, rotating through several input buffers of different
//     contents, each drawn again before its next timed pair (outside the clocks), and every timed output of the
//     submission is checked: no answer kept from an earlier call is right for the call being timed;
//   - sampling goes on until the medians' relative standard errors reach the target (or a cap), and longer when the
//     result lies within its uncertainty of a tier boundary;
//   - the SM clock is read after every pair of samples (clock64 against the global timer); pairs taken at a clock
//     below 95% of the highest seen are dropped as throttled;
//   - the device-to-device copy bandwidth is measured in the same run, as the device's roofline;
//   - the persisting-L2 set-aside is held at zero and the stream's access-policy window cleared, so nothing can be
//     pinned in L2 across the flush;
//   - pairs run in rounds of every (input, side first) combination, shuffled from the case's seed (sample_order.hpp);
//   - NVML's SM clock, temperature and clock event reasons are read after every pair (nvml_reader.hpp): a
//     measurement that throttled (thermal, power, hardware slowdown) is taken once again, and the second's
//     conditions are reported whatever they are.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "case_plan.hpp"
#include "cuda_check.cuh"
#include "gpu_conditions.hpp"
#ifndef CUGRADE_CPU
#include "nvml_reader.hpp"
#endif
#include "sample_order.hpp"
#include "speed_metric.hpp"
#include "statistics.hpp"

namespace cugrade::harness {

#ifdef CUGRADE_CPU
// On the CPU (docs/cpu-mode.md) nothing is timed: the self-check runs no speed test.
class SampleTimer {
public:
    template <class Call>
    double time_ms(cudaStream_t, Call&&) {
        throw std::runtime_error("a speed test needs an NVIDIA GPU");
    }
};

class CopyProbe {
public:
    explicit CopyProbe(double) {}
    double gbps(SampleTimer&, cudaStream_t) { return 0.0; }
};

class NvmlReader {
public:
    void read(gpu_conditions::Conditions&) const {}
};
#else
class CudaEvent {
public:
    CudaEvent() { CUGRADE_CUDA_CHECK(cudaEventCreate(&event_)); }
    ~CudaEvent() { cudaEventDestroy(event_); }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;
    operator cudaEvent_t() const { return event_; }

private:
    cudaEvent_t event_{};
};

// Reads, never writes, the buffer: a write would leave the L2 full of dirty lines, and writing them back would be
// charged to the timed call (about 10 microseconds on an H100, 3% of a 1 GB read).
__global__ void l2_flush_kernel(const float4* __restrict__ buffer, std::size_t count, float* sink) {
    float total = 0.0f;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const float4 v = __ldcg(buffer + i);
        total += v.x + v.w;
    }
    if (total == 1.0f) {  // never true (the buffer holds zeros), but the compiler cannot drop the loads
        sink[0] = total;
    }
}

class L2Flusher {
public:
    L2Flusher() : buffer_(flush_elements()), sink_(1) {
        int device = 0;
        CUGRADE_CUDA_CHECK(cudaGetDevice(&device));
        CUGRADE_CUDA_CHECK(cudaMemset(buffer_.get(), 0, buffer_.size() * sizeof(float4)));
        CUGRADE_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device));
        hold_persisting_l2_at_zero(device);
    }

    void flush(cudaStream_t stream) {
        l2_flush_kernel<<<4 * sms_, 512, 0, stream>>>(buffer_.get(), buffer_.size(), sink_.get());
        CUGRADE_CUDA_CHECK(cudaGetLastError());
    }

private:
    // Lines marked persisting stay in L2 through a flush; with no L2 set aside for them there are none. The submission
    // cannot set the limit (api_policy.cpp refuses cudaDeviceSetLimit), but nothing timed may depend on that.
    static void hold_persisting_l2_at_zero(int device) {
        int most = 0;
        CUGRADE_CUDA_CHECK(cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, device));
        if (most > 0) {  // a GPU before Ampere has no persisting L2
            // Refused where the set-aside is not the context's to make (MIG; under MPS the server's): it is then
            // the administrator's, zero unless set.
            if (cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) != cudaSuccess) {
                cudaGetLastError();
            }
            CUGRADE_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
        }
    }

    // Twice the L2's size, at least 1 MiB.
    static std::size_t flush_elements() {
        int device = 0;
        int l2_bytes = 0;
        CUGRADE_CUDA_CHECK(cudaGetDevice(&device));
        CUGRADE_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
        return std::max<std::size_t>(2 * static_cast<std::size_t>(l2_bytes), 1 << 20) / sizeof(float4);
    }

    DeviceBuffer<float4> buffer_;
    DeviceBuffer<float> sink_;
    int sms_ = 1;
};

// A stream's access-policy window marks the accesses in it persisting: the timed stream has none.
inline void clear_access_policy_window(cudaStream_t stream) {
    cudaStreamAttrValue none{};
    none.accessPolicyWindow.base_ptr = nullptr;
    none.accessPolicyWindow.num_bytes = 0;
    none.accessPolicyWindow.hitRatio = 0.0f;
    none.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
    none.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
    if (cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &none) != cudaSuccess) {
        cudaGetLastError();  // refused where the GPU has no persisting L2: there is no window to clear
    }
}

__global__ void clock_probe_kernel(unsigned long long* result) {
    unsigned long long start_ns, now_ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start_ns));
    const long long start_cycles = clock64();
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_ns));
    } while (now_ns - start_ns < 50000);
    result[0] = static_cast<unsigned long long>(clock64() - start_cycles);
    result[1] = now_ns - start_ns;
}

// The SM clock in MHz, measured over 50 microseconds.
class ClockProbe {
public:
    ClockProbe() : result_(2) {}

    double mhz(cudaStream_t stream) {
        clock_probe_kernel<<<1, 1, 0, stream>>>(result_.get());
        CUGRADE_CUDA_CHECK(cudaGetLastError());
        unsigned long long host[2] = {};
        CUGRADE_CUDA_CHECK(cudaMemcpyAsync(host, result_.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
        CUGRADE_CUDA_CHECK(cudaStreamSynchronize(stream));
        return host[1] > 0 ? 1e3 * static_cast<double>(host[0]) / static_cast<double>(host[1]) : 0.0;
    }

private:
    DeviceBuffer<unsigned long long> result_;
};

// Spins until the host releases it (or `limit_ns` passes): launched before a sample's start event, it holds the
// stream while the host enqueues the whole call, so the time between the start event and the call's first kernel is
// the GPU's, never the host's. A busy machine (a batch grading several submissions) would otherwise charge the
// checker's scheduling delays to the submission.
__global__ void hold_stream_kernel(const volatile int* released, volatile int* timed_out, unsigned long long limit_ns) {
    unsigned long long start_ns, now_ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start_ns));
    do {
        if (*released != 0) {
            return;
        }
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_ns));
    } while (now_ns - start_ns < limit_ns);
    *timed_out = 1;
}

class StreamHold {
public:
    StreamHold() {
        CUGRADE_CUDA_CHECK(cudaHostAlloc(&flags_, 2 * sizeof(int), cudaHostAllocMapped));
        CUGRADE_CUDA_CHECK(cudaHostGetDevicePointer(&device_flags_, flags_, 0));
    }
    ~StreamHold() { cudaFreeHost(flags_); }
    StreamHold(const StreamHold&) = delete;
    StreamHold& operator=(const StreamHold&) = delete;

    void hold(cudaStream_t stream) {
        released()->store(0);
        flags_[1] = 0;
        hold_stream_kernel<<<1, 1, 0, stream>>>(device_flags_, device_flags_ + 1, limit_ns);
        CUGRADE_CUDA_CHECK(cudaGetLastError());
    }
    void release() { released()->store(1); }
    // True when the hold ended at its limit: something in the call waited for the GPU, so the host's time counted.
    bool timed_out() const { return flags_[1] != 0; }

private:
    static constexpr unsigned long long limit_ns = 2'000'000'000ULL;
    std::atomic<int>* released() { return reinterpret_cast<std::atomic<int>*>(flags_); }
    int* flags_ = nullptr;
    int* device_flags_ = nullptr;
};

// One timed call: L2 flushed, the stream held, then start event, the call, stop event on the legacy default stream,
// and the stream released.
class SampleTimer {
public:
    template <class Call>
    double time_ms(cudaStream_t stream, Call&& call) {
        flusher_.flush(stream);
        hold_.hold(stream);
        CUGRADE_CUDA_CHECK(cudaEventRecord(start_, stream));
        try {
            call();
            CUGRADE_CUDA_CHECK(cudaGetLastError());
            CUGRADE_CUDA_CHECK(cudaEventRecord(stop_, cudaStreamLegacy));
        } catch (...) {
            hold_.release();
            throw;
        }
        hold_.release();
        CUGRADE_CUDA_CHECK(cudaEventSynchronize(stop_));
        CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
        if (hold_.timed_out()) {
            throw std::runtime_error("a timed call waited for the GPU while it was being enqueued, so it cannot be "
                                     "timed on the GPU alone");
        }
        float ms = 0.0f;
        CUGRADE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        return ms;
    }

private:
    L2Flusher flusher_;
    StreamHold hold_;
    CudaEvent start_;
    CudaEvent stop_;
};

// The device-to-device copy bandwidth in GB/s, counting bytes read and written, over a buffer of about `bytes`:
// the device's roofline, measured in the speed test's own turn. Its buffers are allocated beforehand, outside that
// turn.
class CopyProbe {
public:
    explicit CopyProbe(double bytes) : source_(copy_size(bytes)), destination_(copy_size(bytes)) {}

    double gbps(SampleTimer& timer, cudaStream_t stream) {
        std::vector<double> samples;
        const auto copy = [&] {
            CUGRADE_CUDA_CHECK(
                cudaMemcpyAsync(destination_.get(), source_.get(), source_.size(), cudaMemcpyDeviceToDevice, stream));
        };
        timer.time_ms(stream, copy);
        while (samples.size() < 10 || (samples.size() < 100 && statistics::median_relative_error(samples) > 0.005)) {
            samples.push_back(timer.time_ms(stream, copy));
        }
        return 2.0 * static_cast<double>(source_.size()) / (statistics::median(samples) * 1e-3) / 1e9;
    }

private:
    static std::size_t copy_size(double bytes) {
        return static_cast<std::size_t>(std::clamp(bytes / 2, 64.0 * (1 << 20), 512.0 * (1 << 20)));
    }

    DeviceBuffer<char> source_;
    DeviceBuffer<char> destination_;
};
#endif

struct SpeedResult {
    std::vector<double> submission_ms;
    std::vector<double> reference_ms;
    std::vector<double> clock_mhz;
    int dropped_throttled = 0;
    bool remeasured = false;  // sampling went on because the result lay near a tier boundary
    bool near_boundary = false;
    double copy_gbps = 0.0;
    gpu_conditions::Conditions conditions;  // NVML's reading over the kept pairs
    std::string problem;                    // a timed call's output was wrong
};

// How a speed test calls the exercise. `time_call(submission, set)` times one call of the submission (or the
// reference) on input set `set`; `check(set)` says what is wrong with the submission's output for that input, right
// after its call; `fresh_input(set)` draws that input again, before each timed pair of calls and outside their
// clocks, so that every timed call of the submission needs an answer no earlier call computed.
struct SpeedCalls {
    std::function<double(bool submission, int set)> time_call;
    std::function<std::string(int set)> check;
    std::function<void(int set)> fresh_input;
};

// Where a speed test runs: the stream and the timers, the number of input sets, the bytes the exercise must move,
// the seed its pairs are ordered by, and NVML.
struct SpeedBench {
    cudaStream_t stream;
    SampleTimer& timer;
    CopyProbe& copy;
    int sets = 1;
    double bytes = 0.0;
    std::uint64_t order_seed = 0;
    const NvmlReader& nvml;
};

#ifndef CUGRADE_CPU
// Keeps the pairs taken at full clock (at least 95% of the highest seen), with NVML's reading of them.
inline void keep_full_clock_pairs(SpeedResult& result, const std::vector<double>& submission,
                                  const std::vector<double>& reference, const std::vector<double>& clocks,
                                  const std::vector<gpu_conditions::Conditions>& conditions) {
    const double top = *std::max_element(clocks.begin(), clocks.end());
    result.submission_ms.clear();
    result.reference_ms.clear();
    result.clock_mhz.clear();
    result.conditions = {};
    for (std::size_t k = 0; k < clocks.size(); ++k) {
        if (clocks[k] >= 0.95 * top) {
            result.submission_ms.push_back(submission[k]);
            result.reference_ms.push_back(reference[k]);
            result.clock_mhz.push_back(clocks[k]);
            if (conditions[k].known) {
                result.conditions.add(conditions[k].sm_clock_mhz, conditions[k].temperature_c, conditions[k].reasons);
            }
        }
    }
    result.dropped_throttled = static_cast<int>(clocks.size() - result.clock_mhz.size());
}

// Whether sampling may stop: both medians known well enough and the tier certain, or a cap reached.
inline bool sampling_done(const plan::Timing& plan, double bytes, SpeedResult& result, std::size_t pairs,
                          double seconds) {
    const int kept = static_cast<int>(result.submission_ms.size());
    const double rse_submission = statistics::median_relative_error(result.submission_ms);
    const double rse_reference = statistics::median_relative_error(result.reference_ms);
    const speed::Figures figures = speed::figures(statistics::median(result.submission_ms),
                                                  statistics::median(result.reference_ms), bytes, result.copy_gbps);
    const double value = speed::metric_value(plan.metric, figures);
    const double uncertainty = speed::metric_uncertainty(plan.metric, value, rse_submission, rse_reference);
    result.near_boundary = statistics::near_any(value, uncertainty, plan.boundaries);
    const bool converged = kept >= plan.sampling.min_samples && rse_submission <= plan.sampling.target_rse &&
                           rse_reference <= plan.sampling.target_rse;
    if (converged && !result.near_boundary) {
        return true;
    }
    if (converged && result.near_boundary) {
        result.remeasured = true;  // the tier depends on it: sample on, up to the caps
    }
    return kept >= plan.sampling.max_samples * (result.remeasured ? 2 : 1) || seconds > plan.sampling.max_seconds ||
           static_cast<int>(pairs) >= 4 * plan.sampling.max_samples;
}

// One measurement: the copy bandwidth, the warm-up, then timed pairs until sampling_done.
inline SpeedResult sample_speed(const plan::Timing& plan, const SpeedBench& bench, const SpeedCalls& calls) {
    SpeedResult result;
    result.copy_gbps = bench.copy.gbps(bench.timer, bench.stream);
    for (int i = 0; i < plan.sampling.warmup; ++i) {
        calls.time_call(false, i % bench.sets);
        calls.time_call(true, i % bench.sets);
    }
    ClockProbe clock;
    SampleOrder order(bench.order_seed, bench.sets);
    std::vector<double> submission, reference, clocks;
    std::vector<gpu_conditions::Conditions> conditions;
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0;; ++i) {
        const TimedPair pair = order.at(i);
        calls.fresh_input(pair.set);
        double reference_ms = 0.0, submission_ms = 0.0;
        std::string problem;
        const auto time_submission = [&] {
            submission_ms = calls.time_call(true, pair.set);
            problem = calls.check(pair.set);  // before the reference's call overwrites the output
        };
        if (pair.submission_first) {
            time_submission();
            reference_ms = calls.time_call(false, pair.set);
        } else {
            reference_ms = calls.time_call(false, pair.set);
            time_submission();
        }
        if (!problem.empty()) {
            result.problem = "timed call " + std::to_string(i + 1) + " (input " + std::to_string(pair.set + 1) +
                             " of " + std::to_string(bench.sets) + "): " + problem;
            return result;
        }
        submission.push_back(submission_ms);
        reference.push_back(reference_ms);
        clocks.push_back(clock.mhz(bench.stream));
        bench.nvml.read(conditions.emplace_back());
        keep_full_clock_pairs(result, submission, reference, clocks, conditions);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (sampling_done(plan, bench.bytes, result, clocks.size(), seconds)) {
            return result;
        }
    }
}
#endif

// Samples the speed test (sample_speed); a measurement that throttled is taken once again, and the second stands.
inline SpeedResult measure_speed(const plan::Timing& plan, const SpeedBench& bench, const SpeedCalls& calls) {
#ifdef CUGRADE_CPU
    throw std::runtime_error("a speed test needs an NVIDIA GPU");
#else
    clear_access_policy_window(bench.stream);
    SpeedResult result = sample_speed(plan, bench, calls);
    if (result.problem.empty() && gpu_conditions::throttled(result.conditions.reasons)) {
        result = sample_speed(plan, bench, calls);
        result.conditions.remeasured = true;
    }
    return result;
#endif
}

}  // namespace cugrade::harness
