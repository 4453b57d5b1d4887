// The part of every exercise's harness that is not about the exercise: reading the plan, reporting over the
// result channel, device buffers, seeded input generation, poisoning, timing and the case loop.
// An exercise's harness.cu supplies one function, `CaseOutcome run_case(const Case&)`, and calls run_harness().
#pragma once

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "protocol.hpp"
#include "seccomp_filter.hpp"
#include "statistics.hpp"

namespace cugrade::harness {

// A CUDA call failed. `origin` says whether the submission's own work failed (its launches surface at the
// synchronisation after its call) or the harness's.
struct CudaFailure : std::runtime_error {
    CudaFailure(cudaError_t code, const std::string& what, std::string submission_call = "", std::string note = "")
        : std::runtime_error(what), code(code), submission_call(std::move(submission_call)), note(std::move(note)) {}
    cudaError_t code;
    std::string submission_call;  // "call 2 of 3" when a call of the entry point failed; empty for the harness's own
    std::string note;             // what the submission did to cause it, when the harness knows

    // What the report says: the submission's call and the error, or where in the harness it failed.
    std::string detail() const {
        const std::string error = std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ")";
        return submission_call.empty() ? std::string(what())
                                       : submission_call + ": " + error + (note.empty() ? "" : ": " + note);
    }
};

// The submission broke a rule of the exercise while it ran (the report's "rejected").
struct RuleBroken : std::runtime_error {
    using std::runtime_error::runtime_error;
};

inline void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
    if (code != cudaSuccess) {
        std::ostringstream message;
        message << file << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code) << " ("
                << cudaGetErrorString(code) << ")";
        throw CudaFailure(code, message.str());
    }
}

#define CUGRADE_CUDA_CHECK(call) ::cugrade::harness::check_cuda((call), #call, __FILE__, __LINE__)

template <class T>
class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t count) : count_(count) {
        // cudaMalloc(0) may return null; one element keeps every buffer a real address.
        CUGRADE_CUDA_CHECK(cudaMalloc(&data_, std::max<std::size_t>(count, 1) * sizeof(T)));
    }
    ~DeviceBuffer() { cudaFree(data_); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    T* get() const { return data_; }
    std::size_t size() const { return count_; }

    std::vector<T> to_host() const {
        std::vector<T> host(count_);
        if (count_ > 0) {
            CUGRADE_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
        }
        return host;
    }

private:
    T* data_ = nullptr;
    std::size_t count_;
};

// A named input distribution from the rubric (docs/rubric.md).
struct Distribution {
    std::string name;
    std::string kind;  // uniform, integers, constant, ascending, descending
    double low = 0.0;
    double high = 1.0;
    double value = 0.0;
    std::string min_at;  // "", "first", "last"
    std::string max_at;
    bool infinities = false;
};
// How the speed test samples (timing.cuh); the grader fills it from the rubric.
struct SpeedPlan {
    int warmup = 3;
    int min_samples = 10;
    int max_samples = 200;
    double target_rse = 0.005;
    double max_seconds = 20.0;
    std::string metric = "ratio";    // or "bandwidth": the tiers' units, for re-measuring near a boundary
    std::vector<double> boundaries;  // the tiers' bounds, in the metric's units
};

struct Case {
    std::string id;
    std::vector<std::uint64_t> shape;  // {n} or {rows, cols}
    std::uint64_t size = 0;            // the number of elements
    Distribution input;
    std::uint64_t seed = 0;
    int calls = 1;
    double lambda = 8.0;
    std::optional<SpeedPlan> timing;  // the speed test
};

struct CaseOutcome {
    std::string status;
    std::string detail;
    nlohmann::json measurements = nlohmann::json::object();

    static CaseOutcome passed(nlohmann::json measurements = nlohmann::json::object()) {
        return {protocol::status_passed, "", std::move(measurements)};
    }
    static CaseOutcome wrong_answer(std::string detail) {
        return {protocol::status_wrong_answer, std::move(detail), nlohmann::json::object()};
    }
};

// ---------------------------------------------------------------------------------------------------------------
// Seeded inputs, generated on the GPU from a counter-based hash so any element can be recomputed from (seed, i).

__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// A uniform number in [0, 1) with 24 random bits.
__host__ __device__ inline float unit_float(std::uint64_t seed, std::uint64_t index) {
    return static_cast<float>(mix64(seed ^ mix64(index)) >> 40) * 0x1p-24f;
}

enum class Kind : int { uniform, integers, constant, ascending, descending };

inline Kind kind_of(const std::string& name) {
    if (name == "integers") return Kind::integers;
    if (name == "constant") return Kind::constant;
    if (name == "ascending") return Kind::ascending;
    if (name == "descending") return Kind::descending;
    if (name == "uniform") return Kind::uniform;
    throw std::runtime_error("unknown input kind '" + name + "'");
}

__global__ void generate_kernel(float* out, std::size_t n, std::uint64_t seed, Kind kind, float low, float high,
                                float value) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const double step = n > 1 ? (static_cast<double>(high) - low) / static_cast<double>(n - 1) : 0.0;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float u = unit_float(seed, i);
        switch (kind) {
            case Kind::uniform: out[i] = low + u * (high - low); break;
            case Kind::integers: out[i] = fminf(high, floorf(low + u * (high - low + 1.0f))); break;
            case Kind::constant: out[i] = value; break;
            case Kind::ascending: out[i] = static_cast<float>(low + step * static_cast<double>(i)); break;
            case Kind::descending: out[i] = static_cast<float>(high - step * static_cast<double>(i)); break;
        }
    }
}

inline std::size_t place_index(const std::string& at, std::size_t n) { return at == "first" ? 0 : n - 1; }

inline void set_element(float* out, std::size_t index, float value) {
    CUGRADE_CUDA_CHECK(cudaMemcpy(out + index, &value, sizeof value, cudaMemcpyHostToDevice));
}

// Fills out[0, n) from the distribution, then places its planted extremes: min_at and max_at put one value below
// (above) every other, infinities put -inf and +inf at seeded places.
inline void generate(float* out, std::size_t n, const Distribution& input, std::uint64_t seed) {
    if (n == 0) {
        return;
    }
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 4096));
    generate_kernel<<<blocks, 256>>>(out, n, seed, kind_of(input.kind), static_cast<float>(input.low),
                                     static_cast<float>(input.high), static_cast<float>(input.value));
    CUGRADE_CUDA_CHECK(cudaGetLastError());
    CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
    const float span = static_cast<float>(std::max(1.0, input.high - input.low));
    if (!input.min_at.empty()) {
        set_element(out, place_index(input.min_at, n), static_cast<float>(input.low) - span);
    }
    if (!input.max_at.empty()) {
        set_element(out, place_index(input.max_at, n), static_cast<float>(input.high) + span);
    }
    if (input.infinities) {
        set_element(out, mix64(seed + 1) % n, -INFINITY);
        if (n > 1) {
            const std::size_t minus = mix64(seed + 1) % n;
            set_element(out, (minus + 1 + mix64(seed + 2) % (n - 1)) % n, INFINITY);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Poison: outputs and scratch are filled with a NaN of a recognisable pattern before every call, so an unwritten
// result never passes and a report can say "never written" rather than "wrong".

inline constexpr std::uint32_t poison_bits = 0x7fbadbadu;

inline bool is_poison(float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits == poison_bits;
}

__global__ void poison_kernel(std::uint32_t* out, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = poison_bits;
    }
}

inline void poison(float* out, std::size_t n) {
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 1024));
    poison_kernel<<<std::max(blocks, 1u), 256>>>(reinterpret_cast<std::uint32_t*>(out), n);
    CUGRADE_CUDA_CHECK(cudaGetLastError());
    CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
}

// A device buffer with poisoned guard regions on both sides, so a write past either end shows.
class GuardedBuffer {
public:
    GuardedBuffer(std::string name, std::size_t count, std::size_t guard = 4096)
        : name_(std::move(name)), count_(count), guard_(guard), buffer_(guard + count + guard) {}

    float* get() const { return buffer_.get() + guard_; }
    std::size_t size() const { return count_; }
    void poison_all() { poison(buffer_.get(), buffer_.size()); }

    std::vector<float> to_host() const {
        std::vector<float> host(count_);
        if (count_ > 0) {
            CUGRADE_CUDA_CHECK(cudaMemcpy(host.data(), get(), count_ * sizeof(float), cudaMemcpyDeviceToHost));
        }
        return host;
    }

    // "wrote past the end of result (1 of the 4096 floats after it)", or "".
    std::string overrun() const {
        std::vector<float> before(guard_), after(guard_);
        CUGRADE_CUDA_CHECK(cudaMemcpy(before.data(), buffer_.get(), guard_ * sizeof(float), cudaMemcpyDeviceToHost));
        CUGRADE_CUDA_CHECK(
            cudaMemcpy(after.data(), get() + count_, guard_ * sizeof(float), cudaMemcpyDeviceToHost));
        const auto written = [](const std::vector<float>& guard) {
            return std::count_if(guard.begin(), guard.end(), [](float v) { return !is_poison(v); });
        };
        if (const auto n = written(after); n > 0) {
            return "wrote past the end of " + name_ + " (" + std::to_string(n) + " of the " + std::to_string(guard_) +
                   " floats after it)";
        }
        if (const auto n = written(before); n > 0) {
            return "wrote before the start of " + name_ + " (" + std::to_string(n) + " of the " +
                   std::to_string(guard_) + " floats before it)";
        }
        return "";
    }

private:
    std::string name_;
    std::size_t count_;
    std::size_t guard_;
    DeviceBuffer<float> buffer_;
};

__global__ void first_difference_kernel(const std::uint32_t* a, const std::uint32_t* b, std::size_t n,
                                        unsigned long long* first) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (a[i] != b[i]) {
            atomicMin(first, static_cast<unsigned long long>(i));
        }
    }
}

// Untouched copies of the inputs, to show that a call left its input as it was.
class InputSnapshot {
public:
    void add(const DeviceBuffer<float>& input) {
        auto copy = std::make_unique<DeviceBuffer<float>>(input.size());
        CUGRADE_CUDA_CHECK(cudaMemcpy(copy->get(), input.get(), input.size() * sizeof(float), cudaMemcpyDeviceToDevice));
        inputs_.push_back(&input);
        copies_.push_back(std::move(copy));
    }

    // "changed its input (element 17 was 0.25, now 0)", or "".
    std::string changed(std::size_t which) const {
        const DeviceBuffer<float>& input = *inputs_.at(which);
        const DeviceBuffer<float>& copy = *copies_.at(which);
        if (input.size() == 0) {
            return "";
        }
        DeviceBuffer<unsigned long long> first(1);
        const unsigned long long none = ~0ull;
        CUGRADE_CUDA_CHECK(cudaMemcpy(first.get(), &none, sizeof none, cudaMemcpyHostToDevice));
        const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((input.size() + 255) / 256, 4096));
        first_difference_kernel<<<blocks, 256>>>(reinterpret_cast<const std::uint32_t*>(input.get()),
                                                 reinterpret_cast<const std::uint32_t*>(copy.get()), input.size(),
                                                 first.get());
        CUGRADE_CUDA_CHECK(cudaGetLastError());
        const unsigned long long index = first.to_host()[0];
        if (index == none) {
            return "";
        }
        float was = 0.0f, now = 0.0f;
        CUGRADE_CUDA_CHECK(cudaMemcpy(&was, copy.get() + index, sizeof was, cudaMemcpyDeviceToHost));
        CUGRADE_CUDA_CHECK(cudaMemcpy(&now, input.get() + index, sizeof now, cudaMemcpyDeviceToHost));
        std::ostringstream detail;
        detail.precision(9);
        detail << "changed its input (element " << index << " was " << was << ", now " << now
               << "): the input is read-only";
        return detail.str();
    }

    std::size_t size() const { return inputs_.size(); }

private:
    std::vector<const DeviceBuffer<float>*> inputs_;
    std::vector<std::unique_ptr<DeviceBuffer<float>>> copies_;
};

// The case's input, c.size elements from its distribution and seed: one buffer, or for the speed test three of
// different contents (seeds c.seed, c.seed + 1, ...), which the timed calls rotate through so a replayed answer shows.
// A batch may share the GPU with other submissions' harnesses (protocol.hpp; the Channel below asks the grader).
// Work on the GPU runs in a SharedGpu span, held only while the GPU works so that a speed test waiting for the GPU
// never waits on host work; a speed test samples in a GpuAlone span. Without a shared GPU both do nothing.
inline void share_gpu();
inline void unshare_gpu();
inline void gpu_alone();
inline void gpu_done();

template <void (*Begin)(), void (*End)()>
class GpuSpan {
public:
    GpuSpan() { Begin(); }
    ~GpuSpan() { End(); }
    GpuSpan(const GpuSpan&) = delete;
    GpuSpan& operator=(const GpuSpan&) = delete;
};
using SharedGpu = GpuSpan<share_gpu, unshare_gpu>;
using GpuAlone = GpuSpan<gpu_alone, gpu_done>;

inline std::vector<std::unique_ptr<DeviceBuffer<float>>> seeded_inputs(const Case& c) {
    SharedGpu gpu;
    const int variants = c.timing ? 3 : 1;
    std::vector<std::unique_ptr<DeviceBuffer<float>>> inputs;
    for (int v = 0; v < variants; ++v) {
        inputs.push_back(std::make_unique<DeviceBuffer<float>>(c.size));
        generate(inputs.back()->get(), c.size, c.input, c.seed + static_cast<std::uint64_t>(v));
    }
    return inputs;
}

// Runs the submission's entry point, then surfaces any error its launches raised. Synchronises the whole device, so
// all of its work is finished (and its errors seen) before anything is checked.
template <class Call>
void call_submission(Call&& call, const std::string& which_call) {
    try {
        call();
        CUGRADE_CUDA_CHECK(cudaGetLastError());
        CUGRADE_CUDA_CHECK(cudaDeviceSynchronize());
    } catch (const CudaFailure& e) {
        throw CudaFailure(e.code, e.what(), which_call);
    }
}

}  // namespace cugrade::harness

#include "remote_submission.cuh"
#include "timing.cuh"

namespace cugrade::harness {

// ---------------------------------------------------------------------------------------------------------------
// The shape of every case: the submission's calls, each on freshly poisoned outputs and checked; then, for the speed
// test, the reference checked once, and both timed alternately (timing.cuh), every timed output of the submission
// checked.

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

// What an exercise's harness hands run_calls for one case.
template <class Entry>
struct CaseCalls {
    Entry submission;
    Entry reference;
    int variants = 1;  // inputs with different contents: untimed calls use the first, the speed test rotates
    std::function<void(Entry, cudaStream_t, int variant)> invoke;  // calls an entry point on input `variant`
    std::function<void()> poison;                                  // refills the outputs and scratch
    std::function<std::string(int variant)> check;                 // what is wrong with the outputs, or ""
    std::function<std::string(int variant)> timed_check;           // after each timed call; empty: `check`
    double bytes = 0.0;                                            // what the exercise must move at least
    nlohmann::json measurements = nlohmann::json::object();
    std::vector<const DeviceBuffer<float>*> inputs;                // read-only: must be unchanged after every call
    std::vector<const GuardedBuffer*> outputs;                     // written: nothing past their ends
};

// What is wrong with the state a call left behind, before its results are even read: writes outside the outputs,
// then changes to the input.
template <class Entry>
std::string broken_contract(const CaseCalls<Entry>& calls, const InputSnapshot& inputs, int variant) {
    for (const GuardedBuffer* output : calls.outputs) {
        if (std::string overrun = output->overrun(); !overrun.empty()) {
            return overrun;
        }
    }
    return variant < static_cast<int>(inputs.size()) ? inputs.changed(static_cast<std::size_t>(variant)) : "";
}

template <class Entry>
CaseOutcome run_calls(const Case& c, const CaseCalls<Entry>& calls) {
    Stream stream;
    InputSnapshot inputs;
    {
        SharedGpu gpu;
        for (const auto* input : calls.inputs) {
            inputs.add(*input);
        }
    }
    if (remote_submission()) {
        std::vector<replay::DeviceRange> ranges;
        for (const auto* input : calls.inputs) {
            ranges.push_back({reinterpret_cast<std::uintptr_t>(input->get()), input->size() * sizeof(float), false});
        }
        for (const auto* output : calls.outputs) {
            ranges.push_back({reinterpret_cast<std::uintptr_t>(output->get()), output->size() * sizeof(float), true});
        }
        remote_submission()->set_ranges(std::move(ranges));
    }
    const auto checked_call = [&](Entry entry, int variant, const std::string& which) -> std::string {
        SharedGpu gpu;
        calls.poison();
        call_submission([&] { calls.invoke(entry, stream, variant); }, which);
        std::string problem = broken_contract(calls, inputs, variant);
        if (problem.empty()) {
            problem = calls.check(variant);
        }
        return problem.empty() ? "" : which + ": " + problem;
    };
    for (int call = 1; call <= c.calls; ++call) {
        const std::string which = "call " + std::to_string(call) + " of " + std::to_string(c.calls);
        if (std::string problem = checked_call(calls.submission, 0, which); !problem.empty()) {
            return CaseOutcome::wrong_answer(problem);
        }
    }
    nlohmann::json measurements = calls.measurements;
    if (c.timing) {
        if (std::string problem = checked_call(calls.reference, 0, "the reference's call"); !problem.empty()) {
            return {protocol::status_harness_error, problem, {}};
        }
        GpuAlone alone;  // nobody else's cases on the GPU while the clocks run
        SampleTimer timer;
        SpeedResult speed;
        try {
            speed = measure_speed(
                *c.timing, stream, timer, calls.variants, calls.bytes,
                [&](bool submission, int variant) {
                    calls.poison();
                    if (submission) {
                        if (remote_submission()) {
                            // Captured before the clock starts; the timed call replays it.
                            remote_submission()->set_capture_only(true);
                            calls.invoke(calls.submission, stream, variant);
                            remote_submission()->set_capture_only(false);
                        }
                    }
                    return timer.time_ms(stream, [&] {
                        calls.invoke(submission ? calls.submission : calls.reference, stream, variant);
                    });
                },
                [&](int variant) {
                    if (std::string problem = broken_contract(calls, inputs, variant); !problem.empty()) {
                        return problem;
                    }
                    return (calls.timed_check ? calls.timed_check : calls.check)(variant);
                });
        } catch (const CudaFailure& e) {
            // The reference passed its own check before timing, so the submission's calls are the ones to blame.
            throw CudaFailure(e.code, e.what(), "while timing");
        }
        // A submission that is fast because it is wrong earns nothing.
        if (!speed.problem.empty()) {
            return CaseOutcome::wrong_answer(speed.problem);
        }
        measurements["submission_ms"] = statistics::median(speed.submission_ms);
        measurements["reference_ms"] = statistics::median(speed.reference_ms);
        measurements["submission_rse"] = statistics::median_relative_error(speed.submission_ms);
        measurements["reference_rse"] = statistics::median_relative_error(speed.reference_ms);
        measurements["samples"] = speed.submission_ms.size();
        measurements["dropped_throttled"] = speed.dropped_throttled;
        measurements["sm_clock_mhz"] = statistics::median(speed.clock_mhz);
        measurements["copy_gbps"] = speed.copy_gbps;
        measurements["remeasured"] = speed.remeasured;
        measurements["near_boundary"] = speed.near_boundary;
        measurements["bytes"] = calls.bytes;
        measurements["inputs"] = calls.variants;
    }
    return CaseOutcome::passed(std::move(measurements));
}

// ---------------------------------------------------------------------------------------------------------------
// The result channel and the case loop.

class Channel {
public:
    Channel() {
        const char* fd_text = std::getenv(protocol::result_fd_env);
        fd_ = fd_text != nullptr ? std::atoi(fd_text) : -1;
        // Without the grader (a person running the harness by hand) results go to stderr.
        out_ = fd_ > 2 ? fdopen(fd_, "w") : stderr;
        if (out_ == nullptr) {
            out_ = stderr;
        }
        unsetenv(protocol::result_fd_env);
        // The run's token marks records as the harness's. Wiped from the environment block itself, which
        // /proc/self/environ would still show after unsetenv.
        if (char* token = std::getenv(protocol::token_env); token != nullptr) {
            token_ = token;
            std::memset(token, 0, std::strlen(token));
        }
        unsetenv(protocol::token_env);
    }

    void send(nlohmann::json record) {
        record["token"] = token_;
        const std::string line = record.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + "\n";
        std::fwrite(line.data(), 1, line.size(), out_);
        std::fflush(out_);
    }

    // A batch's GPU sharing (protocol.hpp). Shared spans nest; the GPU alone covers any shared span inside it.
    void share_gpu() {
        if (shared_depth_++ == 0 && held_ == Held::none) {
            ask_for_gpu("shared", Held::shared);
        }
    }
    void unshare_gpu() {
        if (--shared_depth_ == 0 && held_ == Held::shared) {
            ask_for_gpu("none", Held::none);
        }
    }
    void gpu_alone() { ask_for_gpu("exclusive", Held::exclusive); }
    void gpu_done() {
        if (shared_depth_ > 0) {
            ask_for_gpu("shared", Held::shared);
        } else {
            ask_for_gpu("none", Held::none);
        }
    }

    void set_gpu_gate(bool on) { gpu_gate_ = on && fd_ > 2; }

private:
    enum class Held { none, shared, exclusive };

    // Asks, and for anything but "none" waits for the grant. With the grader gone there is nothing left to report
    // to, so the harness ends.
    void ask_for_gpu(const char* use, Held held) {
        if (!gpu_gate_ || held == held_) {
            return;
        }
        send({{"event", "gpu"}, {"use", use}});
        held_ = held;
        if (held == Held::none) {
            return;
        }
        char granted = 0;
        ssize_t got = 0;
        do {
            got = ::read(fd_, &granted, 1);
        } while (got < 0 && errno == EINTR);
        if (got != 1 || granted != protocol::gpu_granted) {
            std::_Exit(protocol::exit_fatal);
        }
    }

    int fd_ = -1;
    std::FILE* out_;
    std::string token_;
    bool gpu_gate_ = false;
    Held held_ = Held::none;
    int shared_depth_ = 0;
};

inline Channel*& active_channel() {
    static Channel* channel = nullptr;
    return channel;
}

// The channel's GPU requests, when there is a channel (a harness run by hand has none).
template <class Request>
void ask_channel(Request request) {
    if (Channel* channel = active_channel(); channel != nullptr) {
        request(*channel);
    }
}

inline void share_gpu() { ask_channel([](Channel& channel) { channel.share_gpu(); }); }
inline void unshare_gpu() { ask_channel([](Channel& channel) { channel.unshare_gpu(); }); }
inline void gpu_alone() { ask_channel([](Channel& channel) { channel.gpu_alone(); }); }
inline void gpu_done() { ask_channel([](Channel& channel) { channel.gpu_done(); }); }

// Takes away from the checker what it has no use for, before any of the submission's device code runs in it.
// Returns the protections that applied, in the report's words.
inline std::vector<std::string> lock_down(bool deny_processes) {
    std::vector<std::string> protections;
    seccomp::Rules rules;
    rules.deny_network = true;
    rules.deny_new_processes = deny_processes;
    if (const char* error = seccomp::install(rules); error != nullptr) {
        protections.push_back(std::string("no seccomp filter in the checker: ") + error);
    } else {
        protections.push_back(deny_processes ? "seccomp (checker): no new processes, no network"
                                             : "seccomp (checker): no network");
    }
    return protections;
}

inline Case parse_case(const nlohmann::json& j) {
    Case c;
    c.id = j.at("id").get<std::string>();
    c.shape = j.at("shape").get<std::vector<std::uint64_t>>();
    c.size = 1;
    for (const auto extent : c.shape) {
        c.size *= extent;
    }
    const auto& input = j.at("input");
    c.input = {input.at("name").get<std::string>(), input.at("kind").get<std::string>(),
               input.at("low").get<double>(),        input.at("high").get<double>(),
               input.at("value").get<double>(),      input.at("min_at").get<std::string>(),
               input.at("max_at").get<std::string>(), input.at("infinities").get<bool>()};
    c.seed = j.at("seed").get<std::uint64_t>();
    c.calls = j.at("calls").get<int>();
    c.lambda = j.at("lambda").get<double>();
    if (j.contains("timing") && !j.at("timing").is_null()) {
        const auto& t = j.at("timing");
        c.timing = SpeedPlan{t.at("warmup").get<int>(),         t.at("min_samples").get<int>(),
                             t.at("max_samples").get<int>(),    t.at("target_rse").get<double>(),
                             t.at("max_seconds").get<double>(), t.at("metric").get<std::string>(),
                             t.at("boundaries").get<std::vector<double>>()};
    }
    return c;
}

inline std::string describe_number(double value) {
    if (std::isnan(value)) {
        return "nan";
    }
    std::ostringstream text;
    text.precision(9);
    text << value;
    return text.str();
}

// `run_case` runs one case and returns its outcome; CUDA failures propagate as CudaFailure.
inline int run_plan(int argc, char** argv, const std::function<CaseOutcome(const Case&)>& run_case,
                     bool& skip_exit_handlers) {
    Channel channel;
    if (argc != 2) {
        channel.send({{"event", "fatal"}, {"detail", "usage: harness PLAN.json"}});
        return protocol::exit_usage;
    }
    std::vector<Case> cases;
    bool deny_processes = true;
    std::string device_code;
    bool gpu_shared = false;
    try {
        std::ifstream plan_file(argv[1]);
        const auto plan = nlohmann::json::parse(plan_file);
        for (const auto& c : plan.at("cases")) {
            cases.push_back(parse_case(c));
        }
        deny_processes = plan.value("deny_processes", true);
        skip_exit_handlers = plan.value("skip_exit_handlers", true);
        device_code = plan.value("device_code", std::string());
        gpu_shared = plan.value("gpu_gate", false);
        channel.set_gpu_gate(gpu_shared);
    } catch (const std::exception& e) {
        channel.send({{"event", "fatal"}, {"detail", std::string("cannot read the plan: ") + e.what()}});
        return protocol::exit_usage;
    }

    try {
        if (gpu_shared) {
            // Beside other submissions' harnesses, waiting for the GPU sleeps instead of spinning on a core that
            // another harness needs; the timing is the GPU's events', so it does not change.
            CUGRADE_CUDA_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
        }
        CUGRADE_CUDA_CHECK(cudaSetDevice(0));
        CUGRADE_CUDA_CHECK(cudaFree(nullptr));  // creates the context now, outside every case's clock
    } catch (const CudaFailure& e) {
        channel.send({{"event", "fatal"}, {"detail", std::string("cannot initialise CUDA: ") + e.what()}});
        return protocol::exit_fatal;
    }
    try {
        const char* runner_fd = std::getenv(runner::runner_fd_env);
        if (!device_code.empty() && runner_fd != nullptr) {
            remote_submission() = std::make_unique<RemoteSubmission>(device_code, std::atoi(runner_fd));
        }
        unsetenv(runner::runner_fd_env);
    } catch (const std::exception& e) {
        channel.send({{"event", "fatal"}, {"detail", std::string("cannot load the submission's device code: ") + e.what()}});
        return protocol::exit_fatal;
    }
    std::vector<std::string> protections = lock_down(deny_processes);
    if (remote_submission()) {
        const auto& runner_protections = remote_submission()->protections();
        protections.insert(protections.end(), runner_protections.begin(), runner_protections.end());
    }
    channel.send({{"event", "ready"}, {"protections", protections}});

    active_channel() = &channel;
    for (const Case& c : cases) {
        channel.send({{"event", "start"}, {"case", c.id}});
        CaseOutcome outcome;
        try {
            outcome = run_case(c);
        } catch (const CudaFailure& e) {
            // A failure inside the submission's calls is its own; any other is the harness's or the machine's.
            channel.send({{"event", "result"},
                          {"case", c.id},
                          {"status", e.submission_call.empty() ? protocol::status_harness_error
                                                               : protocol::status_cuda_error},
                          {"detail", e.detail()}});
            // A fault can leave the context unusable; a fresh process runs the remaining cases.
            return protocol::exit_restart;
        } catch (const RunnerGone&) {
            // The grader reads from the runner's exit status what became of this case.
            return protocol::exit_runner_gone;
        } catch (const RuleBroken& e) {
            outcome = {protocol::status_rejected, e.what(), nlohmann::json::object()};
        } catch (const std::exception& e) {
            outcome = {protocol::status_harness_error, e.what(), nlohmann::json::object()};
        }
        channel.send({{"event", "result"},
                      {"case", c.id},
                      {"status", outcome.status},
                      {"detail", outcome.detail},
                      {"measurements", outcome.measurements}});
    }
    return protocol::exit_done;
}

// The harness's main(): runs the plan, then ends without running exit handlers, so that nothing the submission
// registered (destructors of its globals, atexit) runs after its last case. Under compute-sanitizer, whose report
// comes from the exit handlers, it returns as usual.
inline int run_harness(int argc, char** argv, const std::function<CaseOutcome(const Case&)>& run_case) {
    bool skip_exit_handlers = false;
    const int code = run_plan(argc, argv, run_case, skip_exit_handlers);
    if (skip_exit_handlers) {
        std::fflush(nullptr);
        std::_Exit(code);
    }
    return code;
}

}  // namespace cugrade::harness
