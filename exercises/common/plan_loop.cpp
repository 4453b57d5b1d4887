// The case loop of every exercise's checker (harness.cuh): the plan read, the checker locked down, each case run and
// its result sent as JSON. Host code only, compiled beside the exercise's harness.cu, so that the CUDA translation
// unit never parses the JSON library.
#include <cuda_runtime.h>

#include <nvtx3/nvToolsExt.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "case_outcome.hpp"
#include "case_plan_json.hpp"
#include "case_record.hpp"
#include "channel.hpp"
#include "cuda_check.cuh"
#include "protocol.hpp"
#include "run_mode.hpp"
#include "seccomp_filter.hpp"
#ifndef CUGRADE_CPU
#include "checker_counters.hpp"
#endif
#include "remote_submission.hpp"

namespace cugrade::harness {
namespace {

// Whether the checker loads the submission's device code beside its runner: on the CPU the runner runs the kernels
// too (cpu/runner.hpp), and there is none.
#ifdef CUGRADE_CPU
constexpr bool loads_device_code = false;
#else
constexpr bool loads_device_code = true;
#endif

// Takes away from the checker what it has no use for, before any of the submission's device code runs in it.
// Returns the protections that applied, in the report's words.
std::vector<std::string> lock_down(bool deny_processes) {
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

// Ends the process holding the GPU shared, so that its context's teardown, which breaks another harness's GPU
// performance counters after a fault (CUPTI_ERROR_UNKNOWN, or that process's own context) and otherwise takes the
// GPU's time from a copy or a sample, never runs beside a speed test or a profile (those have the GPU alone). The
// grader lets go of it once the process is gone.
int end_holding_gpu(Channel& channel, int code) {
    channel.share_gpu();
    return code;
}

// Ends the process for a fresh one to run the remaining cases.
int restart(Channel& channel) { return end_holding_gpu(channel, protocol::exit_restart); }

// Says the checker is ready, with what contains it and, once a submission is loaded, its runner.
void say_ready(Channel& channel, std::vector<std::string> protections) {
    if (remote_submission()) {
        const auto& runner_protections = remote_submission()->protections();
        protections.insert(protections.end(), runner_protections.begin(), runner_protections.end());
    }
    channel.send({{"event", "ready"}, {"protections", protections}});
}

// A line "MARKER ID" on stdout, after everything printed before it (protocol.hpp).
void print_marker(const std::string& marker, const std::string& id) {
    std::fflush(nullptr);
    std::printf("\n%s %s\n", marker.c_str(), id.c_str());
    std::fflush(stdout);
}

// Where a run of cases stopped: every case reported (`finished`), or the exit code the process ends with.
constexpr int finished = -1;

// Runs `cases` in order, each result sent; returns `finished`, or the exit code after a case that ends the process.
int run_cases(Channel& channel, const std::vector<plan::Case>& cases, const std::string& hidden_from,
              const std::string& case_marker, const std::function<CaseOutcome(const plan::Case&)>& run_case) {
    for (const plan::Case& c : cases) {
        if (!hidden_from.empty() && c.id == hidden_from) {
            // Device printf reaches stdout at a synchronisation. Work of the visible cases that failed only now
            // must not be blamed on a hidden case: those start afresh then, as they would after a CUDA error.
            if (cudaDeviceSynchronize() != cudaSuccess) {
                return restart(channel);
            }
            channel.begin_hidden_cases();
        }
        if (!case_marker.empty()) {
            // What the case before printed, and what a tool reported of its kernels, is all out before the marker.
            if (cudaDeviceSynchronize() != cudaSuccess) {
                return restart(channel);
            }
            print_marker(case_marker, c.id);
        }
        channel.send({{"event", "start"}, {"case", c.id}});
        CaseOutcome outcome;
        try {
            outcome = run_case(c);
        } catch (const CudaFailure& e) {
            // A failure inside the submission's calls is its own, and so is a fault that surfaces in the harness's
            // work after the submission ran; any other is the harness's or the machine's.
            const bool left_by_submission =
                e.submission_call.empty() && submission_has_run() && corrupts_context(e.code);
            const std::string detail =
                left_by_submission
                    ? std::string("the GPU faulted after the submission's calls had returned: ") +
                          cudaGetErrorName(e.code) + " (" + cudaGetErrorString(e.code) +
                          "), seen by the grader's next CUDA call. A kernel of the submission's most likely wrote "
                          "outside its buffers, into memory the grader uses; check every index against the bounds of "
                          "the array it writes"
                    : e.detail();
            channel.send({{"event", "result"},
                          {"case", c.id},
                          {"status", e.submission_call.empty() && !left_by_submission ? protocol::status_harness_error
                                                                                      : protocol::status_cuda_error},
                          {"detail", detail},
                          {"fault", cudaGetErrorName(e.code)}});
            // A fault leaves the context unusable, and so may the grader's own failure: a fresh process runs the
            // remaining cases. A call of the submission's that failed alone does not.
            if (e.submission_call.empty() || !context_still_works(e.code)) {
                return restart(channel);
            }
            continue;
        } catch (const RunnerGone&) {
            // The grader reads from the runner's exit status what became of this case.
            return end_holding_gpu(channel, protocol::exit_runner_gone);
        } catch (const RuleBroken& e) {
            outcome = {protocol::status_rejected, e.what()};
            outcome.fresh_process_after = e.channel_lost;
        } catch (const std::exception& e) {
            outcome = {protocol::status_harness_error, e.what()};
        }
        channel.send(result_record(c.id, outcome));
        if (outcome.fresh_process_after) {
            return restart(channel);
        }
    }
    return finished;
}

// A checker that serves submissions in turn (protocol.hpp, "jobs"): each job's device code loaded, its runner met,
// its cases run, then all of it gone before the next. Returns the exit code.
int serve_jobs(Channel& channel, const std::vector<std::string>& own_protections, const std::string& case_marker,
               const std::function<CaseOutcome(const plan::Case&)>& run_case) {
    while (true) {
        std::vector<int> descriptors;
        std::vector<plan::Case> cases;
        std::string hidden_from;
        int device_code_fd = -1;
        int runner_fd = -1;
        try {
            const auto job = nlohmann::json::parse(channel.receive_line(std::size_t{64} << 20, &descriptors));
            if (job.value("done", false)) {
                for (const int fd : descriptors) {
                    ::close(fd);
                }
                return end_holding_gpu(channel, protocol::exit_done);
            }
            counters_round_call_ms() = job.value("call_ms", 0.0);
            for (const auto& c : job.at("cases")) {
                cases.push_back(c.get<plan::Case>());
            }
            hidden_from = job.value("hidden_from", std::string());
            if (descriptors.size() != 2) {
                throw std::runtime_error("a job comes with two descriptors, its device code and its runner's channel");
            }
            device_code_fd = descriptors[0];
            runner_fd = descriptors[1];
        } catch (const std::exception& e) {
            channel.send({{"event", "fatal"}, {"detail", std::string("cannot read the job: ") + e.what()}});
            return protocol::exit_fatal;
        }
        try {
            // Loading a module and meeting the runner use the GPU's memory: beside no speed test.
            channel.share_gpu();
            remote_submission() = std::make_unique<RemoteSubmission>(read_device_code(device_code_fd), runner_fd);
            channel.unshare_gpu();
        } catch (const std::exception& e) {
            channel.send(
                {{"event", "fatal"}, {"detail", std::string("cannot load the submission's device code: ") + e.what()}});
            return protocol::exit_fatal;
        }
        say_ready(channel, own_protections);
        submission_has_run() = false;
        if (const int code = run_cases(channel, cases, hidden_from, case_marker, run_case); code != finished) {
            return code;
        }
        // The job's kernels done and its module unloaded, with what it printed and a tool reported before the
        // marker of its end; its runner's channel closed, so that the runner ends.
        channel.share_gpu();
        const bool clean = cudaDeviceSynchronize() == cudaSuccess;
        remote_submission().reset();
        channel.unshare_gpu();
        if (!clean) {
            return restart(channel);
        }
        print_marker(case_marker, protocol::job_end_marker);
        channel.send({{"event", "job_done"}});
    }
}

// `run_case` runs one case and returns its outcome; CUDA failures propagate as CudaFailure.
int run_plan(int argc, char** argv, const std::function<CaseOutcome(const plan::Case&)>& run_case,
             bool& skip_exit_handlers) {
    Channel channel;
    if (argc != 2) {
        channel.send({{"event", "fatal"}, {"detail", "usage: harness PLAN.json"}});
        return protocol::exit_usage;
    }
    std::vector<plan::Case> cases;
    bool deny_processes = true;
    std::string device_code;
    bool gpu_shared = false;
    std::string hidden_from;  // the first hidden case, after the visible ones
    std::string case_marker;  // printed with each case's id as it starts (protocol.hpp)
    bool jobs = false;        // serves submissions in turn (protocol.hpp)
    try {
        std::ifstream plan_file(argv[1]);
        const auto plan = nlohmann::json::parse(plan_file);
        for (const auto& c : plan.at("cases")) {
            cases.push_back(c.get<plan::Case>());
        }
        deny_processes = plan.value("deny_processes", true);
        skip_exit_handlers = plan.value("skip_exit_handlers", true);
        device_code = plan.value("device_code", std::string());
        gpu_shared = plan.value("gpu_gate", false);
        hidden_from = plan.value("hidden_from", std::string());
        case_marker = plan.value("case_marker", std::string());
        jobs = plan.value("jobs", false);
        bare_buffers() = plan.value("bare_buffers", false);
        if (plan.value("separate_allocations", false)) {
            pooled_device_memory() = false;
        }
        profile_only() = plan.value("profile", false);
        counters_round() = plan.value("counters_round", false);
        counter_profiler_library() = plan.value("counter_profiler", std::string());
        channel.set_gpu_gate(gpu_shared);
        if (jobs && case_marker.empty()) {
            throw std::runtime_error("a plan with jobs needs a case_marker, to mark where each job ends");
        }
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
        // Creates the context now, outside every case's clock, and beside no speed test or profile: a tool's start
        // (compute-sanitizer's instrumenting) allocates device memory too.
        channel.share_gpu();
        CUGRADE_CUDA_CHECK(cudaFree(nullptr));
        set_up_device_memory();
        channel.unshare_gpu();
    } catch (const CudaFailure& e) {
        channel.send({{"event", "fatal"}, {"detail", std::string("cannot initialise CUDA: ") + e.what()}});
        return protocol::exit_fatal;
    }
    try {
        const char* runner_fd = std::getenv(protocol::runner_fd_env);
        if ((!device_code.empty() || !loads_device_code) && runner_fd != nullptr) {
            remote_submission() =
                std::make_unique<RemoteSubmission>(read_device_code(device_code), std::atoi(runner_fd));
        }
        unsetenv(protocol::runner_fd_env);
    } catch (const std::exception& e) {
        channel.send(
            {{"event", "fatal"}, {"detail", std::string("cannot load the submission's device code: ") + e.what()}});
        return protocol::exit_fatal;
    }
    if (profile_only()) {
        nvtxInitialize(nullptr);  // loads the profiler's NVTX library now, while files outside may still be read
    }
#ifndef CUGRADE_CPU
    if (counters_round()) {
        // Loading CUPTI and configuring the metrics is CPU work: done before the round's turn at the GPU alone.
        active_channel() = &channel;
        set_up_checker_counters();
        active_channel() = nullptr;
    }
#endif
    std::vector<std::string> protections = lock_down(deny_processes);
    say_ready(channel, protections);

    active_channel() = &channel;
    // The channel ends with this function: device memory freed after it (a static's, at exit) asks nobody.
    struct ForgetChannel {
        ~ForgetChannel() { active_channel() = nullptr; }
    } forget_channel;
    if (jobs) {
        return serve_jobs(channel, protections, case_marker, run_case);
    }
    if (const int code = run_cases(channel, cases, hidden_from, case_marker, run_case); code != finished) {
        return code;
    }
    return end_holding_gpu(channel, protocol::exit_done);
}

}  // namespace

int run_harness(int argc, char** argv, const std::function<CaseOutcome(const plan::Case&)>& run_case) {
    bool skip_exit_handlers = false;
    const int code = run_plan(argc, argv, run_case, skip_exit_handlers);
    if (skip_exit_handlers) {
        std::fflush(nullptr);
        std::_Exit(code);
    }
    return code;
}

}  // namespace cugrade::harness
