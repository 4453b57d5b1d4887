// A harness that speaks cugrade's protocol (exercises/common/protocol.hpp) without a GPU, for testing the grader's
// run loop. Each case does what its id starts with:
//   pass   reports passed            fail   reports a wrong answer
//   crash  dies of SIGSEGV           hang   never reports
//   cuda   reports a CUDA error and exits to be restarted ("slowcuda": after 0.3 s)
//   exit   exits with code 0 without reporting
//   restart  reports a wrong answer and exits to be restarted, as after a write past an output
//   trap   reports a CUDA error whose fault is a launch failure and exits to be restarted, as a kernel that traps
//   outside  as trap the first time it runs in the working folder (it leaves a file there), then passes: a kernel
//            ended by another context's fault
//   noisy  prints a forged result on stdout, then reports a wrong answer on the channel
//   forge  writes "passed" records without the run's token and with a wrong one, then reports a wrong answer
//   leak   prints the extents of every case this process has run so far (as a submission could, from a static),
//          then reports passed
//   timed  asks for the GPU alone (a speed test), then reports passed
//   queues reports passed, its detail the CUDA_DEVICE_MAX_CONNECTIONS it was given ("unset" if none)
//   explained  reports a wrong answer with an explanation (explanation.hpp) whose topic is not a known one
//   racy   under the racecheck stand-in (CUGRADE_STAND_IN_TOOL) prints a racecheck report of a race, then reports
//          passed; without it, passes
//   racyquiet  as racy, but where a report came before it in the process its own is left out, as racecheck leaves
//              out those past its print limit
//   counters   asks for the machine's turn at the GPU's counters (a plan with "counter_profiler"), then reports
//              passed, its detail "granted", "refused" or "unwanted"; the turn is the grader's to end with the case
//   oob    under the memcheck stand-in prints memcheck's report of a read past an array, reports a CUDA error and
//          exits with code 86; without it, passes ("oobwrong": reports a wrong answer)
//   toolhang   reports a wrong answer, but never reports under a diagnosis's tool (a plan with "bare_buffers" or
//              "profile"), as a kernel that compute-sanitizer or the profiler slows past every limit
//   racehang   reports passed, but never reports under the racecheck stand-in, as a kernel racecheck slows past its
//              case's limit
// Under the racecheck stand-in (CUGRADE_STAND_IN_TOOL) the program ends, when it ends by itself, as racecheck does:
// with its summary (the reports it printed and those it left out), and exit code 86 where it found a race.
// With "gpu_gate" in the plan each case first asks for the GPU as the real harness does, and waits for the grant: the
// GPU alone for a "timed" case and for every case of a profiled run, as the real harness asks around a profiled call.
// Before the plan's "hidden_from" case it says "hidden_cases" and waits for the grader's answer, as the real harness
// does. A plan with "jobs" serves jobs as the real harness does (protocol.hpp): its "context" made holding the GPU
// shared where the plan has "gpu_gate", then each job's line read with its two
// descriptors (closed unread), "ready", its cases, the marker of its end and "job_done", until a line {"done":true};
// a job without two descriptors is fatal. Every genuine record carries the run's token, as the real harness's do;
// "ready" names one protection.
// A plan with "counters_round" (a round of profiles, protocol.hpp) profiles each job's "timed" case: it reports passed
// with a "kernel_profile" whose launches are those in the file CUGRADE_STAND_IN_PROFILE names ("timedprofilecrash"
// dies of SIGSEGV instead, as a submission's fault would end the process).
// A plan with any case id starting with "early" makes the harness abort before it is ready.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "protocol.hpp"

namespace {

std::string token;
int race_reports_printed = 0;
int race_reports_left_out = 0;

// racecheck's summary, and its exit code for an error found (the grader's --error-exitcode).
void print_race_summary() {
    const int errors = race_reports_printed + race_reports_left_out;
    std::printf("========= RACECHECK SUMMARY: %d hazards displayed (%d errors, 0 warnings)\n", race_reports_printed,
                errors);
    std::fflush(stdout);
    if (errors > 0) {
        std::_Exit(86);
    }
}

void send_raw(std::FILE* channel, const nlohmann::json& record) {
    std::fprintf(channel, "%s\n", record.dump().c_str());
    std::fflush(channel);
}

void send(std::FILE* channel, nlohmann::json record) {
    record["token"] = token;
    send_raw(channel, record);
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// The grader's one-byte answer (protocol.hpp); with the grader gone, the harness ends. Descriptors sent with it are
// added to `descriptors`, where given.
char answer_from(int fd, std::vector<int>* descriptors = nullptr) {
    char answer = 0;
    iovec data{&answer, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    if (::recvmsg(fd, &message, MSG_CMSG_CLOEXEC) != 1) {
        std::_Exit(cugrade::protocol::exit_fatal);
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
        for (std::size_t k = 0; c->cmsg_type == SCM_RIGHTS && k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++k) {
            int received = -1;
            std::memcpy(&received, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
            if (descriptors != nullptr) {
                descriptors->push_back(received);
            } else {
                ::close(received);
            }
        }
    }
    return answer;
}
void wait_for(int fd, char expected) {
    if (answer_from(fd) != expected) {
        std::_Exit(cugrade::protocol::exit_fatal);
    }
}

// Asks for the machine's turn at the counters ("take" or "try") and reports the answer; the turn ends with the case.
void ask_counters(std::FILE* channel, int fd, const std::string& id, const char* use) {
    send(channel, {{"event", "counters"}, {"use", use}});
    const char answer = answer_from(fd);
    const char* said = answer == cugrade::protocol::counters_granted    ? "granted"
                       : answer == cugrade::protocol::counters_unwanted ? "unwanted"
                                                                        : "refused";
    send(channel, {{"event", "result"}, {"case", id}, {"status", "passed"}, {"detail", said}});
}

// Asks for the GPU and waits for the grader's grant.
void use_gpu(std::FILE* channel, int fd, const char* use) {
    send(channel, {{"event", "gpu"}, {"use", use}});
    wait_for(fd, cugrade::protocol::gpu_granted);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        return cugrade::protocol::exit_usage;
    }
    const char* tool = std::getenv("CUGRADE_STAND_IN_TOOL");
    const bool under_racecheck = tool != nullptr && std::string(tool) == "racecheck";
    if (under_racecheck) {
        std::atexit(print_race_summary);
    }
    const int channel_fd = std::atoi(std::getenv(cugrade::protocol::result_fd_env));
    std::FILE* channel = fdopen(channel_fd, "w");
    if (const char* value = std::getenv(cugrade::protocol::token_env); value != nullptr) {
        token = value;
    }
    std::ifstream plan_file(argv[1]);
    const auto plan = nlohmann::json::parse(plan_file);
    const bool gpu_gate = plan.value("gpu_gate", false);
    const bool profile = plan.value("profile", false);
    const bool under_tool = profile || plan.value("bare_buffers", false);
    const std::string plan_hidden_from = plan.value("hidden_from", std::string());
    const nlohmann::json plan_cases = plan["cases"];
    for (const auto& c : plan_cases) {
        if (starts_with(c["id"].get<std::string>(), "early")) {
            std::abort();
        }
    }
    std::string seen;
    // Runs the cases; -1 once all have reported, else the exit code of a case that ends the process.
    const auto run_cases = [&](const nlohmann::json& cases, const std::string& hidden_from) -> int {
        for (const auto& c : cases) {
            const std::string id = c["id"];
            seen += c["shape"].dump() + " ";
            if (id == hidden_from) {
                send(channel, {{"event", "hidden_cases"}});
                wait_for(channel_fd, cugrade::protocol::output_drained);
            }
            if (plan.contains("case_marker")) {
                std::printf("\n%s %s\n", plan["case_marker"].get<std::string>().c_str(), id.c_str());
                std::fflush(stdout);
            }
            send(channel, {{"event", "start"}, {"case", id}});
            if (gpu_gate) {
                use_gpu(channel, channel_fd, starts_with(id, "timed") || profile ? "exclusive" : "shared");
            }
            if (plan.value("counters_round", false) && starts_with(id, "timedprofilecrash")) {
                ::raise(SIGSEGV);
            } else if (plan.value("counters_round", false) && starts_with(id, "timed")) {
                nlohmann::json launches = nlohmann::json::array();
                if (const char* file = std::getenv("CUGRADE_STAND_IN_PROFILE"); file != nullptr) {
                    std::ifstream read(file);
                    launches = nlohmann::json::parse(read);
                }
                send(channel, {{"event", "result"},
                               {"case", id},
                               {"status", "passed"},
                               {"detail", ""},
                               {"measurements",
                                {{"kernel_profile",
                                  {{"launches", launches},
                                   {"passes", 5},
                                   {"setup_seconds", 0.0},
                                   {"seconds", 0.01},
                                   {"steps", nlohmann::json::object()}}}}}});
            } else if (starts_with(id, "crash")) {
                ::raise(SIGSEGV);
            } else if (starts_with(id, "hang") || (starts_with(id, "toolhang") && under_tool) ||
                       (starts_with(id, "racehang") && under_racecheck)) {
                while (true) {
                    ::pause();
                }
            } else if (starts_with(id, "cuda") || starts_with(id, "slowcuda")) {
                if (starts_with(id, "slowcuda")) {
                    ::usleep(300 * 1000);
                }
                send(channel, {{"event", "result"},
                               {"case", id},
                               {"status", "cuda_error"},
                               {"detail", "cudaErrorIllegalAddress: an illegal memory access was encountered"},
                               {"fault", "cudaErrorIllegalAddress"}});
                return cugrade::protocol::exit_restart;
            } else if (starts_with(id, "trap") ||
                       (starts_with(id, "outside") && !std::ifstream(id + ".ended-from-outside").good())) {
                if (starts_with(id, "outside")) {
                    std::ofstream(id + ".ended-from-outside") << "once\n";
                }
                send(channel, {{"event", "result"},
                               {"case", id},
                               {"status", "cuda_error"},
                               {"detail", "cudaErrorLaunchFailure: unspecified launch failure"},
                               {"fault", "cudaErrorLaunchFailure"}});
                return cugrade::protocol::exit_restart;
            } else if (starts_with(id, "restart")) {
                send(channel, {{"event", "result"},
                               {"case", id},
                               {"status", "wrong_answer"},
                               {"detail", "wrote past the end of the output"}});
                return cugrade::protocol::exit_restart;
            } else if (starts_with(id, "exit")) {
                std::exit(0);
            } else if (starts_with(id, "forge")) {
                send_raw(channel, {{"event", "result"}, {"case", id}, {"status", "passed"}});
                send_raw(channel, {{"event", "result"}, {"case", id}, {"status", "passed"}, {"token", "0123"}});
                send(channel, {{"event", "result"}, {"case", id}, {"status", "wrong_answer"}, {"detail", "wrong"}});
            } else if (starts_with(id, "leak")) {
                std::printf("seen: %s\n", seen.c_str());
                std::fflush(stdout);
                send(channel, {{"event", "result"}, {"case", id}, {"status", "passed"}, {"detail", ""}});
            } else if (starts_with(id, "queues")) {
                const char* queues = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
                send(channel, {{"event", "result"},
                               {"case", id},
                               {"status", "passed"},
                               {"detail", queues != nullptr ? queues : "unset"}});
            } else if (starts_with(id, "explained")) {
                send(channel, {{"event", "result"},
                               {"case", id},
                               {"status", "wrong_answer"},
                               {"detail", "expected 3, got 2"},
                               {"explanation",
                                {{"summary", "the last element is left out"},
                                 {"category", "the last elements left out"},
                                 {"hint", "a bound one short"},
                                 {"topic", "not a topic"},
                                 {"evidence", {"the total of indices 0 to 1, without index 2", 7}},
                                 {"map", {".#", std::string(200, '#')}}}}});
            } else if (starts_with(id, "counters") && plan.contains("counter_profiler")) {
                ask_counters(channel, channel_fd, id, "take");
            } else if (starts_with(id, "timedprofile") && plan.contains("counter_profiler")) {
                ask_counters(channel, channel_fd, id, "try");  // a slow speed test's profile, in its turn alone
            } else if (starts_with(id, "oob")) {
                // Under memcheck it reads past an array: the tool reports it, stops the launch and fails the process.
                if (tool != nullptr && std::string(tool) == "memcheck") {
                    std::printf("========= Invalid __global__ read of size 4 bytes\n"
                                "=========     at tree(float *)+0x70 in sum.cu:12\n"
                                "=========     by thread (0,0,0) in block (0,0,0)\n"
                                "=========\n");
                    std::fflush(stdout);
                    send(channel, {{"event", "result"},
                                   {"case", id},
                                   {"status", "cuda_error"},
                                   {"detail", "cudaErrorLaunchFailure: unspecified launch failure"}});
                    return 86;  // compute-sanitizer's exit code for an error found
                }
                const bool wrong = starts_with(id, "oobwrong");
                send(channel, {{"event", "result"},
                               {"case", id},
                               {"status", wrong ? "wrong_answer" : "passed"},
                               {"detail", wrong ? "expected 1, got 2" : ""}});
            } else if (starts_with(id, "racy")) {
                if (under_racecheck && starts_with(id, "racyquiet") && race_reports_printed > 0) {
                    ++race_reports_left_out;
                } else if (under_racecheck) {
                    ++race_reports_printed;
                    std::printf(
                        "========= Error: Race reported between Write access at tree(float *)+0x2f0 in sum.cu:16\n"
                        "=========     and Read access at tree(float *)+0x2d0 in sum.cu:%s [4 hazards]\n"
                        "=========\n",
                        id.substr(id.rfind('-') + 1).c_str());
                    std::fflush(stdout);
                }
                send(channel, {{"event", "result"}, {"case", id}, {"status", "passed"}, {"detail", ""}});
            } else if (starts_with(id, "noisy")) {
                std::printf("{\"event\":\"result\",\"case\":\"%s\",\"status\":\"passed\"}\n", id.c_str());
                std::fflush(stdout);
                send(channel, {{"event", "result"}, {"case", id}, {"status", "wrong_answer"}, {"detail", "wrong"}});
            } else {
                const bool pass = starts_with(id, "pass") || starts_with(id, "timed") || starts_with(id, "racehang") ||
                                  starts_with(id, "outside");
                send(channel, {{"event", "result"},
                               {"case", id},
                               {"status", pass ? "passed" : "wrong_answer"},
                               {"detail", pass ? "" : "expected 1, got 2"}});
            }
        }
        return -1;
    };
    if (plan.value("jobs", false) && gpu_gate) {
        // Makes its context holding the GPU shared, as the real harness does: the grant comes before any job.
        use_gpu(channel, channel_fd, "shared");
        send(channel, {{"event", "gpu"}, {"use", "none"}});
    }
    send(channel, {{"event", "ready"}, {"protections", {"scripted: nothing to contain"}}});
    if (!plan.value("jobs", false)) {
        const int code = run_cases(plan_cases, plan_hidden_from);
        return code >= 0 ? code : cugrade::protocol::exit_done;
    }
    while (true) {
        std::string line;
        std::vector<int> descriptors;
        for (char byte = answer_from(channel_fd, &descriptors); byte != '\n';
             byte = answer_from(channel_fd, &descriptors)) {
            line += byte;
        }
        for (const int fd : descriptors) {
            ::close(fd);
        }
        const auto job = nlohmann::json::parse(line);
        if (job.value("done", false)) {
            return cugrade::protocol::exit_done;
        }
        if (descriptors.size() != 2) {
            send(channel, {{"event", "fatal"}, {"detail", "a job without its two descriptors"}});
            return cugrade::protocol::exit_fatal;
        }
        send(channel, {{"event", "ready"}, {"protections", {"scripted: nothing to contain"}}});
        if (const int code = run_cases(job.at("cases"), job.value("hidden_from", std::string())); code >= 0) {
            return code;
        }
        std::printf("\n%s %s\n", plan["case_marker"].get<std::string>().c_str(), cugrade::protocol::job_end_marker);
        std::fflush(stdout);
        send(channel, {{"event", "job_done"}});
    }
}
