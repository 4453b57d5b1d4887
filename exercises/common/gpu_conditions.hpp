// The GPU's state during a speed test as NVML reports it (its SM clock, temperature and clock event reasons, read by
// the checker: nvml_reader.hpp), and the words a speed test's detail gives it. Shared by the harness, which decides
// whether a measurement is taken again, and the grader, which writes the detail. Plain C++: no CUDA, no NVML here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cugrade::gpu_conditions {

// NVML's clock event reasons (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*): bits of one mask.
inline constexpr std::uint64_t reason_gpu_idle = 0x1;
inline constexpr std::uint64_t reason_applications_clocks = 0x2;
inline constexpr std::uint64_t reason_power_cap = 0x4;
inline constexpr std::uint64_t reason_hardware_slowdown = 0x8;
inline constexpr std::uint64_t reason_sync_boost = 0x10;
inline constexpr std::uint64_t reason_thermal = 0x20;
inline constexpr std::uint64_t reason_hardware_thermal = 0x40;
inline constexpr std::uint64_t reason_power_brake = 0x80;
inline constexpr std::uint64_t reason_display_clocks = 0x100;

// The reasons that slow a measurement down, each with its word, in the order a detail names them. An idle GPU, a
// clock an administrator set, sync boost and the display's clock are how the GPU runs, not a slowdown.
inline const std::vector<std::pair<std::uint64_t, const char*>>& throttling_reasons() {
    static const std::vector<std::pair<std::uint64_t, const char*>> reasons = {
        {reason_thermal, "thermal"},
        {reason_hardware_thermal, "hardware thermal"},
        {reason_power_cap, "power cap"},
        {reason_power_brake, "power brake"},
        {reason_hardware_slowdown, "hardware slowdown"},
    };
    return reasons;
}

inline bool throttled(std::uint64_t reasons) {
    return std::any_of(throttling_reasons().begin(), throttling_reasons().end(),
                       [&](const auto& reason) { return (reasons & reason.first) != 0; });
}

// The throttling reasons in `reasons` as words, comma-separated: "thermal, power cap". Empty when none throttles.
inline std::string throttle_words(std::uint64_t reasons) {
    std::string words;
    for (const auto& [bit, word] : throttling_reasons()) {
        if ((reasons & bit) != 0) {
            words += (words.empty() ? "" : ", ") + std::string(word);
        }
    }
    return words;
}

// What NVML said over the timed calls: the lowest SM clock, the highest temperature and every reason seen, read
// after each timed pair. `known` is false where NVML could not be read (no driver library, a GPU it cannot name).
struct Conditions {
    bool known = false;
    unsigned sm_clock_mhz = 0;
    unsigned temperature_c = 0;
    std::uint64_t reasons = 0;
    bool remeasured = false;  // the first measurement throttled; these are the second's

    void add(unsigned clock_mhz, unsigned temperature, std::uint64_t sample_reasons) {
        sm_clock_mhz = known ? std::min(sm_clock_mhz, clock_mhz) : clock_mhz;
        temperature_c = known ? std::max(temperature_c, temperature) : temperature;
        reasons |= sample_reasons;
        known = true;
    }
};

// The speed test's detail about the GPU, or "" where NVML said nothing:
//   "the GPU at 1980 MHz, 45 C"
//   "the GPU at 1980 MHz, 45 C (measured again: the first measurement throttled)"
//   "measured while the GPU throttled (thermal): 1410 MHz, 83 C"
inline std::string detail(const Conditions& c) {
    if (!c.known) {
        return "";
    }
    const std::string state = std::to_string(c.sm_clock_mhz) + " MHz, " + std::to_string(c.temperature_c) + " C";
    if (throttled(c.reasons)) {
        return "measured while the GPU throttled (" + throttle_words(c.reasons) + "): " + state;
    }
    return "the GPU at " + state + (c.remeasured ? " (measured again: the first measurement throttled)" : "");
}

}  // namespace cugrade::gpu_conditions
