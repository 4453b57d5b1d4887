// What keeps a submission honest about memory: outputs and scratch filled with a recognisable NaN (poison) before
// every call, so that an unwritten result never passes and a report can say "never written" rather than "wrong";
// poisoned guard regions on both sides of each, so that a write past either end shows; and untouched copies of the
// inputs, so that a call that changes its input shows. Every comparison runs on the GPU.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "run_mode.hpp"

namespace cugrade::harness {

inline constexpr std::uint32_t poison_bits = 0x7fbadbadu;

__host__ __device__ inline bool is_poison(float value) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(value) == poison_bits;
#else
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits == poison_bits;
#endif
}

__global__ void poison_kernel(std::uint32_t* out, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = poison_bits;
    }
}

// Asynchronous: the submission's work replays on a stream that waits for the legacy default stream's, where this
// runs, and a host-side wait here would cost a turn at the GPU (CallFootprint says why that is dear).
inline void poison(float* out, std::size_t n) {
    poison_kernel<<<grid_for(n, 1024), 256>>>(reinterpret_cast<std::uint32_t*>(out), n);
    CUGRADE_CUDA_CHECK(cudaGetLastError());
}

// Counts the elements of [begin, begin + n) that are no longer poison into *written, which the caller zeroed.
__global__ void count_written_kernel(const float* begin, std::size_t n, unsigned long long* written) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    unsigned long long count = 0;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        count += !is_poison(begin[i]);
    }
    if (count > 0) {
        atomicAdd(written, count);
    }
}

// A device buffer of `count` floats with poisoned guard regions of `guard` floats on both sides. `hint` ends the
// message about a write outside it: what usually causes one in this exercise.
class GuardedBuffer {
public:
    GuardedBuffer(std::string name, std::size_t count, std::size_t guard = 4096, std::string hint = "")
        : name_(std::move(name)),
          hint_(std::move(hint)),
          count_(count),
          guard_(bare_buffers() ? 0 : guard),
          buffer_(guard_ + count + guard_) {}

    float* get() const { return buffer_.get() + guard_; }
    std::size_t size() const { return count_; }
    void poison_all() {
        if (!bare_buffers()) {
            poison(buffer_.get(), buffer_.size());
        }
    }
    std::vector<float> to_host() const {
        std::vector<float> host(count_);
        if (count_ > 0) {
            CUGRADE_CUDA_CHECK(cudaMemcpy(host.data(), get(), count_ * sizeof(float), cudaMemcpyDeviceToHost));
        }
        return host;
    }

    // Launches the counts of the guard elements that are no longer poison: those before it into written[0], those
    // after it into written[1], both zeroed by the caller. Read back with the call's other checks (CallFootprint).
    void count_guard_writes(unsigned long long* written) const {
        if (guard_ == 0) {
            return;
        }
        count_written_kernel<<<grid_for(guard_, 256), 256>>>(buffer_.get(), guard_, written);
        count_written_kernel<<<grid_for(guard_, 256), 256>>>(get() + count_, guard_, written + 1);
        CUGRADE_CUDA_CHECK(cudaGetLastError());
    }

    // For the counts count_guard_writes made: "wrote past the end of result (1 of the 4096 floats after it)", or "".
    std::string overrun(unsigned long long before, unsigned long long after) const {
        const auto message = [&](unsigned long long n, const char* where, const char* side) {
            return "wrote " + std::string(where) + " " + name_ + " (" + std::to_string(n) + " of the " +
                   std::to_string(guard_) + " floats " + side + " it)" + (hint_.empty() ? "" : ": " + hint_);
        };
        if (after > 0) {
            return message(after, "past the end of", "after");
        }
        if (before > 0) {
            return message(before, "before the start of", "before");
        }
        return "";
    }

private:
    std::string name_;
    std::string hint_;
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
    void add(const DeviceBuffer<float>& input, std::string name) {
        auto copy = std::make_unique<DeviceBuffer<float>>(input.size());
        CUGRADE_CUDA_CHECK(
            cudaMemcpy(copy->get(), input.get(), input.size() * sizeof(float), cudaMemcpyDeviceToDevice));
        inputs_.push_back({&input, std::move(copy), std::move(name)});
    }

    // Takes the snapshot of input `which` again: after its set was drawn again.
    void retake(std::size_t which) {
        const Snapshot& snapshot = inputs_.at(which);
        CUGRADE_CUDA_CHECK(cudaMemcpy(snapshot.copy->get(), snapshot.input->get(),
                                      snapshot.input->size() * sizeof(float), cudaMemcpyDeviceToDevice));
    }

    // Launches the search for input `which`'s first element that differs from its snapshot, into *first, which the
    // caller set to ~0 (none). Read back with the call's other checks (CallFootprint).
    void find_change(std::size_t which, unsigned long long* first) const {
        const Snapshot& snapshot = inputs_.at(which);
        if (snapshot.input->size() == 0) {
            return;
        }
        first_difference_kernel<<<grid_for(snapshot.input->size()), 256>>>(
            reinterpret_cast<const std::uint32_t*>(snapshot.input->get()),
            reinterpret_cast<const std::uint32_t*>(snapshot.copy->get()), snapshot.input->size(), first);
        CUGRADE_CUDA_CHECK(cudaGetLastError());
    }

    // For the index find_change found: "changed its input b (element 17 was 0.25, now 0)...", or "" for none.
    std::string changed(std::size_t which, unsigned long long index) const {
        if (index == no_change) {
            return "";
        }
        const Snapshot& snapshot = inputs_.at(which);
        std::ostringstream detail;
        detail.precision(9);
        detail << "changed its " << snapshot.name << " (element " << index << " was "
               << read_element(snapshot.copy->get() + index) << ", now " << read_element(snapshot.input->get() + index)
               << "): the " << snapshot.name << " is read-only";
        return detail.str();
    }

    static constexpr unsigned long long no_change = ~0ull;

    std::size_t size() const { return inputs_.size(); }

private:
    struct Snapshot {
        const DeviceBuffer<float>* input;
        std::unique_ptr<DeviceBuffer<float>> copy;
        std::string name;
    };
    std::vector<Snapshot> inputs_;
};

// What a call left behind outside its outputs and in its inputs, read back in one copy: two guard counts per output
// (GuardedBuffer::count_guard_writes), then each input's first changed element (InputSnapshot::find_change). One
// read instead of one per buffer matters where other processes share the GPU: each wait for the GPU from the host
// then waits for this process's turn on it, about a millisecond with eight processes, and several behind long
// kernels (docs/performance-history.md, "Every wait for the GPU is a turn among processes").
class CallFootprint {
public:
    CallFootprint(std::size_t outputs, std::size_t inputs) : outputs_(outputs), slots_(2 * outputs + inputs) {}

    // Zeroes the guard counts and sets every input's first change to none, without waiting.
    void clear() {
        CUGRADE_CUDA_CHECK(cudaMemset(slots_.get(), 0, 2 * outputs_ * sizeof(unsigned long long)));
        CUGRADE_CUDA_CHECK(
            cudaMemset(slots_.get() + 2 * outputs_, 0xff, (slots_.size() - 2 * outputs_) * sizeof(unsigned long long)));
    }
    // Launches the guard counts of each output, in the order of the slots.
    void count_guard_writes(const std::vector<GuardedBuffer*>& outputs) const {
        for (std::size_t i = 0; i < outputs.size(); ++i) {
            outputs[i]->count_guard_writes(slots_.get() + 2 * i);
        }
    }
    unsigned long long* first_change(std::size_t input) const { return slots_.get() + 2 * outputs_ + input; }
    // Waits for the launches, and reads them all.
    std::vector<unsigned long long> read() const { return slots_.to_host(); }

private:
    std::size_t outputs_;
    DeviceBuffer<unsigned long long> slots_;
};

}  // namespace cugrade::harness
