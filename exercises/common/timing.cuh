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
//   - the device-to-device copy bandwidth is measured in the same run, as the device's roofline.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "case_plan.hpp"
#include "cuda_check.cuh"
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
        CUGRADE_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
    }

    void flush(cudaStream_t stream) {
        l2_flush_kernel<<<4 * sms_, 512, 0, stream>>>(buffer_.get(), buffer_.size(), sink_.get());
        CUGRADE_CUDA_CHECK(cudaGetLastError());
    }

private:
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
        while (samples.size() < 10 ||
               (samples.size() < 100 && statistics::median_relative_error(samples) > 0.005)) {
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
    std::string problem;  // a timed call's output was wrong
};

// `time_call(submission, variant)` times one call of the submission (or the reference) on input `variant`;
// `check(variant)` says what is wrong with the submission's output for that input, right after its call;
// `fresh_input(variant)` draws that input again, before each timed pair of calls and outside their clocks, so that
// every timed call of the submission needs an answer no earlier call computed.
inline SpeedResult measure_speed(const plan::Timing& plan, cudaStream_t stream, SampleTimer& timer, CopyProbe& copy,
                                 int variants, double bytes,
                                 const std::function<double(bool submission, int variant)>& time_call,
                                 const std::function<std::string(int variant)>& check,
                                 const std::function<void(int variant)>& fresh_input) {
#ifdef CUGRADE_CPU
    throw std::runtime_error("a speed test needs an NVIDIA GPU");
#else
    SpeedResult result;
    result.copy_gbps = copy.gbps(timer, stream);
    for (int i = 0; i < plan.sampling.warmup; ++i) {
        time_call(false, i % variants);
        time_call(true, i % variants);
    }
    ClockProbe clock;
    std::vector<double> submission, reference, clocks;
    const auto start = std::chrono::steady_clock::now();
    const auto seconds = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    for (int i = 0;; ++i) {
        const int variant = i % variants;
        fresh_input(variant);
        // Alternate which side goes first, so that neither always follows the other.
        double reference_ms = 0.0, submission_ms = 0.0;
        std::string problem;
        const auto time_submission = [&] {
            submission_ms = time_call(true, variant);
            problem = check(variant);  // before the reference's call overwrites the output
        };
        if (i % 2 == 0) {
            reference_ms = time_call(false, variant);
            time_submission();
        } else {
            time_submission();
            reference_ms = time_call(false, variant);
        }
        if (!problem.empty()) {
            result.problem = "timed call " + std::to_string(i + 1) + " (input " + std::to_string(variant + 1) +
                             " of " + std::to_string(variants) + "): " + problem;
            return result;
        }
        submission.push_back(submission_ms);
        reference.push_back(reference_ms);
        clocks.push_back(clock.mhz(stream));

        // Keep the pairs taken at full clock.
        const double top = *std::max_element(clocks.begin(), clocks.end());
        result.submission_ms.clear();
        result.reference_ms.clear();
        result.clock_mhz.clear();
        for (std::size_t k = 0; k < clocks.size(); ++k) {
            if (clocks[k] >= 0.95 * top) {
                result.submission_ms.push_back(submission[k]);
                result.reference_ms.push_back(reference[k]);
                result.clock_mhz.push_back(clocks[k]);
            }
        }
        result.dropped_throttled = static_cast<int>(clocks.size() - result.clock_mhz.size());

        const int kept = static_cast<int>(result.submission_ms.size());
        const double rse_submission = statistics::median_relative_error(result.submission_ms);
        const double rse_reference = statistics::median_relative_error(result.reference_ms);
        const speed::Figures figures =
            speed::figures(statistics::median(result.submission_ms), statistics::median(result.reference_ms), bytes,
                           result.copy_gbps);
        const double value = speed::metric_value(plan.metric, figures);
        const double uncertainty = speed::metric_uncertainty(plan.metric, value, rse_submission, rse_reference);
        result.near_boundary = statistics::near_any(value, uncertainty, plan.boundaries);
        const bool converged = kept >= plan.sampling.min_samples && rse_submission <= plan.sampling.target_rse &&
                               rse_reference <= plan.sampling.target_rse;
        if (converged && !result.near_boundary) {
            break;
        }
        if (converged && result.near_boundary) {
            result.remeasured = true;  // the tier depends on it: sample on, up to the caps
        }
        if (kept >= plan.sampling.max_samples * (result.remeasured ? 2 : 1) || seconds() > plan.sampling.max_seconds ||
            static_cast<int>(clocks.size()) >= 4 * plan.sampling.max_samples) {
            break;
        }
    }
    return result;
#endif
}

}  // namespace cugrade::harness
