// Counting the bytes copied from the GPU to the host during each of the submission's calls, through CUPTI's activity
// records, which see every copy whatever API made it (runtime or driver, synchronous or not). A sum computed on the
// host needs its input there first, so a bound on that traffic catches it.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#if CUGRADE_HAVE_CUPTI
#include <cupti.h>
#endif

namespace cugrade::harness {

class TrafficMonitor {
public:
    // Starts counting; says why not when it cannot (no CUPTI in this build, or CUPTI refused, as under a profiler).
    std::string start() {
#if CUGRADE_HAVE_CUPTI
        if (cuptiActivityRegisterCallbacks(&TrafficMonitor::buffer_requested, &TrafficMonitor::buffer_completed) !=
                CUPTI_SUCCESS ||
            cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS) {
            return "cupti refused to record copies";
        }
        active_ = true;
        return "";
#else
        return "cugrade was built without cupti";
#endif
    }

    bool active() const { return active_; }

    // Device-to-host bytes copied since the last call of this function (all copies finished: call after a sync).
    std::uint64_t take_device_to_host_bytes() {
#if CUGRADE_HAVE_CUPTI
        if (active_) {
            cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        }
#endif
        return device_to_host().exchange(0);
    }

private:
    static std::atomic<std::uint64_t>& device_to_host() {
        static std::atomic<std::uint64_t> bytes{0};
        return bytes;
    }

#if CUGRADE_HAVE_CUPTI
    // The fields every version of CUPTI's memcpy record begins with.
    struct MemcpyRecordStart {
        CUpti_ActivityKind kind;
        std::uint8_t copy_kind;
        std::uint8_t source_kind;
        std::uint8_t destination_kind;
        std::uint8_t flags;
        std::uint64_t bytes;
    };

    static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
        constexpr std::size_t bytes = 1 << 20;
        *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes));
        *size = *buffer != nullptr ? bytes : 0;
        *max_records = 0;
    }

    static void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                          std::size_t valid) {
        CUpti_Activity* record = nullptr;
        while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
            if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
                const auto* copy = reinterpret_cast<const MemcpyRecordStart*>(record);
                if (copy->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH) {
                    device_to_host() += copy->bytes;
                }
            }
        }
        std::free(buffer);
    }
#endif

    bool active_ = false;
};

}  // namespace cugrade::harness
