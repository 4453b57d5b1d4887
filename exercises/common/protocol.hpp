// The contract between the grader and an exercise's harness process. Both sides include this file, so a field
// renamed here is renamed everywhere.
//
// The grader starts the harness as `harness PLAN.json` with one end of a socket as file descriptor result_fd_env
// names. The harness writes one JSON object per line to it, each with the run's "token":
//   {"event":"ready","protections":[...]}               CUDA is initialised; per-case clocks start now
//   {"event":"start","case":ID}                         the case ID begins
//   {"event":"gpu","use":U}                             only when the plan has "gpu_gate": true (see below)
//   {"event":"counters","use":U}                        the same, around a profile of the GPU's counters
//   {"event":"hidden_cases"}                            the plan's "hidden_from" case is next (see below)
//   {"event":"result","case":ID,"status":S,"detail":D,"measurements":{...}}
//                                                       and for some wrong answers "explanation":{...}
//                                                       (explanation.hpp); for a CUDA error "fault":NAME,
//                                                       the error's name (cudaErrorIllegalAddress)
//   {"event":"fatal","detail":D}                        the harness cannot go on (not the submission's fault)
// The submission's stdout and stderr never reach this channel.
//
// A batch shares a GPU between the harnesses of several submissions (grader's gpu_gate.hpp). Before a case's calls
// the harness asks for the GPU with use "shared", before a speed test's sampling with "exclusive", and gives it back
// with "none"; after asking for "shared" or "exclusive" it waits for one byte (gpu_granted) on the same descriptor.
// The grader gives back whatever a harness held when its case ends or the process does.
// A harness that reads the GPU's performance counters takes turns with the others' profiles: {"event":"counters",
// "use":"take"} (asked while holding nothing of the GPU) is answered with one byte, counters_granted or, after the
// grader's patience, counters_refused; {"event":"counters","use":"try"} (asked holding the GPU alone, after a speed
// test's sampling) is answered at once, granted only if no other profile has the counters, and the harness keeps what
// it holds of the GPU; {"event":"counters","use":"give"} ends the turn, as does the case's end. Either question may
// be answered counters_unwanted: the grader wants no profile of this speed test (a smaller case failed), and the
// harness makes none.
//
// With "case_marker" in the plan (a run under racecheck), the harness prints a line "MARKER ID" to stdout as each case
// starts, after its GPU work before is done: a tool's reports printed after it are that case's.
//
// With "separate_allocations": true in the plan (a run under a tool), each of the harness's device buffers is an
// allocation of its own; otherwise they come from a pool the process keeps (cuda_check.cuh).
//
// A plan with "jobs": true holds no cases and no device code, and a "case_marker": the checker serves submissions in
// turn (a race check kept across a batch's submissions of one exercise). After "ready" it reads a job: one line, a
// JSON object with its "cases" (and "hidden_from"), sent with two descriptors (SCM_RIGHTS): the submission's device
// code, open for reading, then the checker's end of the channel to that submission's runner. It loads the code, meets
// the runner, says "ready" with the runner's protections, and runs the cases as a plan's; then it waits for the GPU,
// unloads the code, closes the runner's channel (the runner ends), prints the line "MARKER job_end_marker" and says
// {"event":"job_done"}: what was printed before that line is the job's. A line {"done":true} ends the process, as
// does a case that would end any process (a fault: exit_restart).
//
// A plan with "jobs" and "counters_round" (and "counter_profiler") serves a batch's round of profiles: each job is one
// slow speed test, timed in its submission's own run, with that time as the job's "call_ms"; the checker checks one
// call and reads the call's counters (no timing), its profiler attached from the first job to the process's end.
// The grader holds the GPU alone and the machine's counters for the whole round: it answers every "gpu" request at
// once, and the checker asks for no turn at the counters.
//
// One process runs a submission's visible cases, then its hidden ones. What the program prints during hidden cases
// is for instructors only, so before the plan's "hidden_from" case the harness waits for the GPU's printf, flushes
// its output, says "hidden_cases" and waits for one byte (output_drained): the grader has then read all that was
// printed so far (the runner flushes after every call), and files the rest as the hidden cases' output.
#pragma once

namespace cugrade::protocol {

inline constexpr const char* result_fd_env = "CUGRADE_RESULT_FD";
// A secret of the run, in the harness's environment; every record carries it as "token", and the grader ignores
// records without it.
inline constexpr const char* token_env = "CUGRADE_TOKEN";
// The channel between the harness (the checker) and the submission's runner (capture/runner.hpp): the descriptor
// each of the two processes finds named in this variable.
inline constexpr const char* runner_fd_env = "CUGRADE_RUNNER_FD";

// The id printed with the case marker once a job's cases are done (a served checker, "jobs" above): no case has it.
inline constexpr const char* job_end_marker = "(end of job)";

inline constexpr char gpu_granted = 'g';
inline constexpr char output_drained = 'o';
inline constexpr char counters_granted = 'c';
inline constexpr char counters_refused = 'r';
inline constexpr char counters_unwanted = 'u';

// Exit codes of the harness process.
inline constexpr int exit_done = 0;     // every case in the plan reported
inline constexpr int exit_usage = 2;    // the plan could not be read
inline constexpr int exit_restart = 3;  // a CUDA error poisoned the context, or the submission wrote past an output:
                                        // the remaining cases run in a fresh process
inline constexpr int exit_fatal = 4;    // the harness reported a fatal event
inline constexpr int exit_runner_gone = 5;  // the submission's runner ended during the current case

// The section where the grader moves the submission's initialisers (.init_array: nvcc's registration of its device
// code, its global constructors) so that the loader does not run them before main; the runner calls them once it
// has locked the process down. The linker names its bounds __start_SECTION and __stop_SECTION.
#define CUGRADE_SUBMISSION_INIT_SECTION cugrade_submission_init
// Its finalisers (.fini_array) go here, and nothing runs them.
#define CUGRADE_SUBMISSION_FINI_SECTION cugrade_submission_fini

// In the CPU self-check, what CUDA's error string says of a kernel's memory fault ends with this, the fault's facts as
// one JSON object, and "]" (exercises/common/cpu/cuda_on_cpu.cpp); the grader puts the line in the code in their place
// (grader/src/cpu/cpu_fault.cpp).
inline constexpr const char* cpu_fault_marker = "[cugrade-cpu-fault ";

// Statuses the harness itself reports in a result event.
inline constexpr const char* status_passed = "passed";
inline constexpr const char* status_wrong_answer = "wrong_answer";
inline constexpr const char* status_cuda_error = "cuda_error";
inline constexpr const char* status_harness_error = "harness_error";
inline constexpr const char* status_rejected = "rejected";  // broke a rule at run time (host-side computing)

// The "fault" of a kernel ended by an exception on the GPU that is not a bad address of its own: a trap, an
// exception under a tool, and also another context's fault on a GPU that several processes share, which can end the
// kernels running beside it.
inline constexpr const char* fault_launch_failure = "cudaErrorLaunchFailure";

}  // namespace cugrade::protocol
