#include "counter_profile.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "profile_metrics.hpp"

#if __has_include(<cupti_range_profiler.h>)
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#define CUGRADE_HAVE_CUPTI 1
#endif

namespace cugrade::harness {

std::map<std::string, double> launch_metrics(const LaunchShape& launch) {
    const auto attribute = [&](CUfunction_attribute which) {
        int value = 0;
        cuFuncGetAttribute(&value, which, launch.function);
        return static_cast<double>(value);
    };
    CUdevice device = 0;
    cuCtxGetDevice(&device);
    const auto device_attribute = [&](CUdevice_attribute which) {
        int value = 0;
        cuDeviceGetAttribute(&value, which, device);
        return static_cast<double>(value);
    };
    const double threads = double(launch.block[0]) * launch.block[1] * launch.block[2];
    const double warps = std::max(1.0, std::ceil(threads / 32.0));
    const double max_warps = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) / 32.0;
    const double max_blocks = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    const double registers = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
    const double shared = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) + launch.shared_bytes;
    // Registers are handed out per warp in steps of 256; shared memory per block with the driver's reserve.
    const double warp_registers = std::ceil(registers * 32.0 / 256.0) * 256.0;
    const double by_registers =
        warp_registers > 0 ? std::floor(device_attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR) /
                                        (warp_registers * warps))
                           : max_blocks;
    const double by_shared =
        shared > 0 ? std::floor(device_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) /
                                (shared + device_attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)))
                   : max_blocks;
    int active_blocks = 0;
    cuOccupancyMaxActiveBlocksPerMultiprocessor(&active_blocks, launch.function, static_cast<int>(threads),
                                                launch.shared_bytes);
    return {
        {"sm__maximum_warps_per_active_cycle_pct", max_warps > 0 ? 100.0 * active_blocks * warps / max_warps : 0.0},
        {"launch__occupancy_limit_registers", by_registers},
        {"launch__occupancy_limit_shared_mem", by_shared},
        {"launch__occupancy_limit_blocks", max_blocks},
        {"launch__occupancy_limit_warps", std::floor(max_warps / warps)},
        {"launch__registers_per_thread", registers},
        {"launch__shared_mem_per_block", shared},
        {"launch__grid_size", double(launch.grid[0]) * launch.grid[1] * launch.grid[2]},
        {"launch__block_size", threads},
        {"launch__sm_count", device_attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)},
    };
}

namespace {

// Runs `step` and adds the seconds it took to `steps[name]`.
template <class Step>
void timed_step(std::map<std::string, double>& steps, const char* name, Step&& step) {
    const auto started = std::chrono::steady_clock::now();
    step();
    steps[name] += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace

#ifdef CUGRADE_HAVE_CUPTI

namespace {

// CUPTI's functions, looked up in the library the grader named, so that the checker links without it.
#define CUGRADE_CUPTI_FUNCTIONS(X)                  \
    X(cuptiGetResultString)                         \
    X(cuptiProfilerInitialize)                      \
    X(cuptiProfilerDeInitialize)                    \
    X(cuptiDeviceGetChipName)                       \
    X(cuptiProfilerGetCounterAvailability)          \
    X(cuptiProfilerHostInitialize)                  \
    X(cuptiProfilerHostDeinitialize)                \
    X(cuptiProfilerHostGetMetricProperties)         \
    X(cuptiProfilerHostConfigAddMetrics)            \
    X(cuptiProfilerHostGetConfigImageSize)          \
    X(cuptiProfilerHostGetConfigImage)              \
    X(cuptiProfilerHostGetNumOfPasses)              \
    X(cuptiProfilerHostEvaluateToGpuValues)         \
    X(cuptiRangeProfilerEnable)                     \
    X(cuptiRangeProfilerDisable)                    \
    X(cuptiRangeProfilerGetCounterDataSize)         \
    X(cuptiRangeProfilerCounterDataImageInitialize) \
    X(cuptiRangeProfilerSetConfig)                  \
    X(cuptiRangeProfilerStart)                      \
    X(cuptiRangeProfilerStop)                       \
    X(cuptiRangeProfilerDecodeData)                 \
    X(cuptiRangeProfilerGetCounterDataInfo)

struct Cupti {
#define CUGRADE_CUPTI_POINTER(name) decltype(&::name) name = nullptr;
    CUGRADE_CUPTI_FUNCTIONS(CUGRADE_CUPTI_POINTER)
#undef CUGRADE_CUPTI_POINTER
    void* library = nullptr;
};

// Ranges a pass keeps, at most and at least; kernels past them are counted, not measured.
constexpr std::size_t max_ranges = 256;
constexpr std::size_t min_ranges = 16;

// What tells a range's kernel: the blocks and warps it launched.
constexpr const char* blocks_launched = "sm__ctas_launched.sum";
constexpr const char* warps_launched = "smsp__warps_launched.sum";

}  // namespace

struct CounterProfiler::State {
    Cupti cupti;
    bool initialized = false;
    CUpti_Profiler_Host_Object* host = nullptr;
    std::vector<const char*> metrics;  // profile_metrics::counters that this GPU has, then the matching ones
    std::vector<std::uint8_t> config;
    int passes = 0;
    std::map<std::string, double> steps;
    CUpti_RangeProfiler_Object* attached = nullptr;  // between profiles only where kept
    bool keep_attached = false;

    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    // Here rather than in ~CounterProfiler, so that a constructor that throws half-way leaves CUPTI as it found it.
    ~State() {
        detach();
        drop_host();
        if (initialized) {
            CUpti_Profiler_DeInitialize_Params deinitialize{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
            cupti.cuptiProfilerDeInitialize(&deinitialize);
        }
        // The library stays loaded: CUPTI may still have threads or callbacks of its own in the process.
    }

    void detach() {
        if (attached != nullptr) {
            CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
            disable.pRangeProfilerObject = attached;
            cupti.cuptiRangeProfilerDisable(&disable);
            attached = nullptr;
        }
    }

    void drop_host() {
        if (host != nullptr) {
            CUpti_Profiler_Host_Deinitialize_Params deinitialize{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
            deinitialize.pHostObject = host;
            cupti.cuptiProfilerHostDeinitialize(&deinitialize);
            host = nullptr;
        }
    }

    // The host's part of the setup: the metrics this GPU has, their configuration, and how many passes it takes.
    void set_up_host(const char* chip_name, const std::uint8_t* availability) {
        Cupti& c = cupti;
        CUpti_Profiler_Host_Initialize_Params initialize{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
        initialize.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        initialize.pChipName = chip_name;
        initialize.pCounterAvailabilityImage = availability;
        check(c.cuptiProfilerHostInitialize(&initialize), "cuptiProfilerHostInitialize");
        host = initialize.pHostObject;
        // A metric this GPU or CUPTI does not know is left out, rather than every metric with it.
        std::vector<const char*> wanted{profile_metrics::counters.begin(), profile_metrics::counters.end()};
        wanted.push_back(blocks_launched);
        wanted.push_back(warps_launched);
        metrics.clear();
        for (const char* metric : wanted) {
            CUpti_Profiler_Host_GetMetricProperties_Params properties{
                CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
            properties.pHostObject = host;
            properties.pMetricName = metric;
            if (c.cuptiProfilerHostGetMetricProperties(&properties) == CUPTI_SUCCESS) {
                metrics.push_back(metric);
            }
        }
        CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
        add.pHostObject = host;
        add.ppMetricNames = metrics.data();
        add.numMetrics = metrics.size();
        check(c.cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
        CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
        size.pHostObject = host;
        check(c.cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
        config.resize(size.configImageSize);
        CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
        image.pHostObject = host;
        image.pConfigImage = config.data();
        image.configImageSize = config.size();
        check(c.cuptiProfilerHostGetConfigImage(&image), "cuptiProfilerHostGetConfigImage");
        CUpti_Profiler_Host_GetNumOfPasses_Params pass_count{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
        pass_count.pConfigImage = config.data();
        pass_count.configImageSize = config.size();
        check(c.cuptiProfilerHostGetNumOfPasses(&pass_count), "cuptiProfilerHostGetNumOfPasses");
        passes = static_cast<int>(pass_count.numOfPasses);
    }

    // Throws with CUPTI's words, and what to do where that is known.
    void check(CUptiResult result, const char* what) const {
        if (result == CUPTI_SUCCESS) {
            return;
        }
        if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
            throw std::runtime_error("the GPU's performance counters are reserved for administrators on this machine "
                                     "(the NVIDIA driver's NVreg_RestrictProfilingToAdminUsers=1)");
        }
        if (result == CUPTI_ERROR_HARDWARE_BUSY) {
            throw std::runtime_error("another profile was using the GPU's performance counters");
        }
        const char* words = nullptr;
        if (cupti.cuptiGetResultString != nullptr) {
            cupti.cuptiGetResultString(result, &words);
        }
        throw std::runtime_error(std::string(what) + " failed: " + (words != nullptr ? words : "unknown CUPTI error"));
    }
};

CounterProfiler::CounterProfiler(const std::string& library, const GpuStep& on_gpu)
    : state_(std::make_unique<State>()) {
    State& s = *state_;
    Cupti& c = s.cupti;
    c.library = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (c.library == nullptr) {
        const char* error = dlerror();
        throw std::runtime_error("CUPTI could not be loaded: " + std::string(error != nullptr ? error : library));
    }
#define CUGRADE_CUPTI_LOOKUP(name)                                                              \
    c.name = reinterpret_cast<decltype(c.name)>(dlsym(c.library, #name));                       \
    if (c.name == nullptr) {                                                                    \
        throw std::runtime_error("CUPTI at " + library +                                        \
                                 " has no " #name ": a CUPTI of CUDA 12.6 or later is needed"); \
    }
    CUGRADE_CUPTI_FUNCTIONS(CUGRADE_CUPTI_LOOKUP)
#undef CUGRADE_CUPTI_LOOKUP

    CUpti_Profiler_Initialize_Params initialize{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    s.check(c.cuptiProfilerInitialize(&initialize), "cuptiProfilerInitialize");
    s.initialized = true;
    CUcontext context = nullptr;
    cuCtxGetCurrent(&context);
    CUdevice device = 0;
    cuCtxGetDevice(&device);
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = static_cast<std::size_t>(device);
    s.check(c.cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");
    // The counters' configuration is made on the host. A GPU this CUPTI knows needs no image of which counters are
    // free for it, so the GPU is asked (alone: counter_profile.hpp) only where CUPTI wants the image.
    std::vector<std::uint8_t> available;
    const auto read_availability = [&] {
        CUpti_Profiler_GetCounterAvailability_Params availability{
            CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
        availability.ctx = context;
        on_gpu([&] {
            timed_step(s.steps, "availability", [&] {
                s.check(c.cuptiProfilerGetCounterAvailability(&availability), "cuptiProfilerGetCounterAvailability");
                available.resize(availability.counterAvailabilityImageSize);
                availability.pCounterAvailabilityImage = available.data();
                s.check(c.cuptiProfilerGetCounterAvailability(&availability), "cuptiProfilerGetCounterAvailability");
            });
        });
    };
    const auto host_setup_started = std::chrono::steady_clock::now();
    try {
        s.set_up_host(chip.pChipName, nullptr);
    } catch (const std::runtime_error&) {
        s.drop_host();
        read_availability();
        s.set_up_host(chip.pChipName, available.data());
    }
    s.steps["host setup"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - host_setup_started).count() -
        s.steps["availability"];
}

CounterProfiler::~CounterProfiler() = default;

int CounterProfiler::passes() const { return state_->passes; }

void CounterProfiler::keep_attached(bool keep) { state_->keep_attached = keep; }

void CounterProfiler::detach(const GpuStep& on_gpu) {
    if (state_->attached != nullptr) {
        on_gpu([&] { state_->detach(); });
    }
}

const std::map<std::string, double>& CounterProfiler::step_seconds() const { return state_->steps; }

std::vector<ProfiledLaunch> CounterProfiler::profile(const ProfiledCall& call, const GpuStep& on_gpu) {
    State& s = *state_;
    Cupti& c = s.cupti;
    CUpti_RangeProfiler_Object* profiler = nullptr;
    // Detached at the end unless kept, and always after a failure: the next profile attaches afresh.
    struct Detach {
        State& s;
        bool succeeded = false;
        void now() {
            if (!s.keep_attached || !succeeded) {
                s.detach();
            }
        }
        ~Detach() {
            if (!succeeded) {
                s.detach();
            }
        }
    } detach_at_end{s};

    const std::size_t ranges_a_pass =
        call.expected_launches == 0 ? max_ranges
                                    : std::clamp<std::size_t>(2 * call.expected_launches + 8, min_ranges, max_ranges);
    std::vector<std::uint8_t> data;
    // Each kernel launch is a range, and the call itself is replayed for each pass: the call rewrites its outputs
    // and leaves its inputs alone, so no memory needs saving between passes. Where CUPTI cannot replay that way, it
    // replays each kernel itself, saving and restoring the memory it writes.
    CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    const auto configure = [&] {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params initialize{
            CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
        initialize.pRangeProfilerObject = profiler;
        initialize.pCounterData = data.data();
        initialize.counterDataSize = data.size();
        s.check(c.cuptiRangeProfilerCounterDataImageInitialize(&initialize),
                "cuptiRangeProfilerCounterDataImageInitialize");
        config.pRangeProfilerObject = profiler;
        config.pConfig = s.config.data();
        config.configSize = s.config.size();
        config.pCounterDataImage = data.data();
        config.counterDataImageSize = data.size();
        config.range = CUPTI_AutoRange;
        config.replayMode = CUPTI_UserReplay;
        config.maxRangesPerPass = ranges_a_pass;
        config.numNestingLevels = 1;
        config.minNestingLevel = 1;
        config.passIndex = 0;
        config.targetNestingLevel = 1;
        if (c.cuptiRangeProfilerSetConfig(&config) != CUPTI_SUCCESS) {
            config.replayMode = CUPTI_KernelReplay;
            s.check(c.cuptiRangeProfilerSetConfig(&config), "cuptiRangeProfilerSetConfig");
        }
    };
    const auto run_passes = [&](const std::function<void()>& prepare, const std::function<void()>& one_call) {
        const int most_passes = config.replayMode == CUPTI_KernelReplay ? 1 : s.passes + 2;
        bool all_submitted = false;
        for (int pass = 0; pass < most_passes && !all_submitted; ++pass) {
            if (prepare) {
                prepare();
            }
            CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
            start.pRangeProfilerObject = profiler;
            s.check(c.cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
            one_call();
            CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
            stop.pRangeProfilerObject = profiler;
            s.check(c.cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
            all_submitted = stop.isAllPassSubmitted != 0;
        }
        if (!all_submitted) {
            throw std::runtime_error("the counters needed more passes than CUPTI said (" + std::to_string(s.passes) +
                                     ")");
        }
    };
    const auto decode = [&] {
        CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
        decode.pRangeProfilerObject = profiler;
        s.check(c.cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData");
    };
    for (const char* step : {"enable", "warm-up", "passes", "decode", "disable", "evaluate"}) {
        s.steps[step] = 0.0;
    }
    // Kept attached after a whole profile, the profiler has paid CUPTI's first start already.
    const bool warmed_up = s.attached != nullptr;
    on_gpu([&] {
        timed_step(s.steps, "enable", [&] {
            CUcontext context = nullptr;
            cuCtxGetCurrent(&context);
            CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
            enable.ctx = context;
            if (s.attached == nullptr) {
                s.check(c.cuptiRangeProfilerEnable(&enable), "cuptiRangeProfilerEnable");
                s.attached = enable.pRangeProfilerObject;
            }
            profiler = s.attached;

            CUpti_RangeProfiler_GetCounterDataSize_Params size{
                CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
            size.pRangeProfilerObject = profiler;
            size.pMetricNames = s.metrics.data();
            size.numMetrics = s.metrics.size();
            size.maxNumOfRanges = ranges_a_pass;
            size.maxNumRangeTreeNodes = ranges_a_pass;
            s.check(c.cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");
            data.resize(size.counterDataSize);
            configure();
        });
        if (call.warm_up && !warmed_up) {
            timed_step(s.steps, "warm-up", [&] {
                run_passes(nullptr, call.warm_up);
                decode();
                configure();  // the call's passes start again from the first, into a fresh image
            });
        }
        timed_step(s.steps, "passes", [&] { run_passes(call.prepare, call.call); });
        timed_step(s.steps, "decode", decode);
        detach_at_end.succeeded = true;
        timed_step(s.steps, "disable", [&] { detach_at_end.now(); });
    });
    const auto evaluate_started = std::chrono::steady_clock::now();
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = data.data();
    info.counterDataImageSize = data.size();
    s.check(c.cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");

    std::vector<std::map<std::string, double>> ranges;
    for (std::size_t range = 0; range < info.numTotalRanges; ++range) {
        std::vector<double> values(s.metrics.size());
        CUpti_Profiler_Host_EvaluateToGpuValues_Params evaluate{
            CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
        evaluate.pHostObject = s.host;
        evaluate.pCounterDataImage = data.data();
        evaluate.counterDataImageSize = data.size();
        evaluate.ppMetricNames = s.metrics.data();
        evaluate.numMetrics = s.metrics.size();
        evaluate.rangeIndex = range;
        evaluate.pMetricValues = values.data();
        s.check(c.cuptiProfilerHostEvaluateToGpuValues(&evaluate), "cuptiProfilerHostEvaluateToGpuValues");
        std::map<std::string, double> metrics;
        for (std::size_t m = 0; m < s.metrics.size(); ++m) {
            metrics[s.metrics[m]] = values[m];
        }
        ranges.push_back(std::move(metrics));
    }
    s.steps["evaluate"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - evaluate_started).count();

    const std::vector<LaunchShape> shapes = call.launches();
    const bool can_match =
        std::find(s.metrics.begin(), s.metrics.end(), std::string_view(blocks_launched)) != s.metrics.end() &&
        std::find(s.metrics.begin(), s.metrics.end(), std::string_view(warps_launched)) != s.metrics.end();
    std::vector<ProfiledLaunch> profiled;
    std::size_t next_shape = 0;
    for (auto& metrics : ranges) {
        if (next_shape < shapes.size() && can_match) {
            const LaunchShape& shape = shapes[next_shape];
            const double blocks = double(shape.grid[0]) * shape.grid[1] * shape.grid[2];
            const double warps = blocks * std::ceil(double(shape.block[0]) * shape.block[1] * shape.block[2] / 32.0);
            if (metrics[blocks_launched] != blocks || metrics[warps_launched] != warps) {
                continue;  // not one of the call's kernels
            }
        }
        ProfiledLaunch launch;
        if (next_shape < shapes.size()) {
            launch.name = shapes[next_shape].name;
            launch.metrics = launch_metrics(shapes[next_shape]);
            ++next_shape;
        } else {
            launch.name = "kernel " + std::to_string(profiled.size() + 1);
        }
        metrics.erase(blocks_launched);
        metrics.erase(warps_launched);
        launch.metrics.insert(metrics.begin(), metrics.end());
        profiled.push_back(std::move(launch));
    }
    for (; next_shape < shapes.size(); ++next_shape) {  // past the ranges CUPTI kept
        profiled.push_back({shapes[next_shape].name, launch_metrics(shapes[next_shape])});
    }
    return profiled;
}

#else

struct CounterProfiler::State {};

CounterProfiler::CounterProfiler(const std::string&, const GpuStep&) {
    throw std::runtime_error("the checker was built without CUPTI's headers (cupti_range_profiler.h, CUDA 12.6 or "
                             "later)");
}
CounterProfiler::~CounterProfiler() = default;
int CounterProfiler::passes() const { return 0; }
const std::map<std::string, double>& CounterProfiler::step_seconds() const {
    static const std::map<std::string, double> none;
    return none;
}
std::vector<ProfiledLaunch> CounterProfiler::profile(const ProfiledCall&, const GpuStep&) { return {}; }

#endif

}  // namespace cugrade::harness
