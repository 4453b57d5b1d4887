#include "batch/slurm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "base/error.hpp"
#include "base/json_file.hpp"
#include "sandbox/process.hpp"
#include "base/file_io.hpp"
#include "batch/results_store.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

std::string shell_quote(const std::string& text) {
    std::string quoted = "'";
    for (const char c : text) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

std::string shell_words(const std::vector<std::string>& words) {
    std::vector<std::string> quoted;
    for (const auto& word : words) {
        quoted.push_back(shell_quote(word));
    }
    return fmt::format("{}", fmt::join(quoted, " "));
}

// `cugrade grade` as every job runs it: the same class, course, cache and options as the command that submitted.
std::vector<std::string> grade_command(const Course& course, const BatchOptions& batch, const fs::path& folder) {
    std::error_code ec;
    std::vector<std::string> command = {fs::canonical("/proc/self/exe", ec).string(),
                                        "grade",
                                        folder.string(),
                                        "-o",
                                        fs::absolute(batch.results).string(),
                                        "--course",
                                        fs::absolute(course.root).string(),
                                        "--require-sandbox",
                                        to_string(batch.required_sandbox),
                                        "--canvas-assignment",
                                        batch.canvas_assignment};
    if (!batch.cache_dir.empty()) {
        command.insert(command.end(), {"--cache-dir", fs::absolute(batch.cache_dir).string()});
    }
    for (const auto& exercise : batch.exercises) {
        command.insert(command.end(), {"--exercise", exercise});
    }
    if (batch.roster) {
        command.insert(command.end(), {"--roster", fs::absolute(*batch.roster).string()});
    }
    if (batch.nvcc) {
        command.insert(command.end(), {"--nvcc", *batch.nvcc});
    }
    if (batch.jobs > 0) {
        command.insert(command.end(), {"--jobs", std::to_string(batch.jobs)});
    }
    if (batch.gpu_jobs > 0) {
        command.insert(command.end(), {"--gpu-jobs", std::to_string(batch.gpu_jobs)});
    }
    return command;
}

std::string sbatch_header(const SlurmOptions& slurm, const std::string& name, const fs::path& log) {
    std::string header = fmt::format("#!/bin/bash\n#SBATCH --job-name={}\n#SBATCH --output={}\n", name, log.string());
    for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
             {"partition", slurm.partition}, {"gres", slurm.gres}, {"time", slurm.time}, {"account", slurm.account}}) {
        if (!value.empty()) {
            header += fmt::format("#SBATCH --{}={}\n", option, value);
        }
    }
    for (const auto& argument : slurm.sbatch_args) {
        header += fmt::format("#SBATCH {}\n", argument);
    }
    return header;
}

// Runs sbatch on a script; returns the job's id.
std::string submit(const SlurmOptions& slurm, const std::vector<std::string>& options, const fs::path& script) {
    ProcessOptions process;
    process.argv = {slurm.sbatch, "--parsable"};
    process.argv.insert(process.argv.end(), options.begin(), options.end());
    process.argv.push_back(script.string());
    ProcessResult result;
    try {
        result = run_process(process, std::chrono::seconds(120));
    } catch (const std::exception& e) {
        throw std::runtime_error(
            fmt::format("{} (is Slurm installed here? --slurm submits from a login node)", e.what()));
    }
    std::string output = result.output;
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) {
        output.pop_back();
    }
    // "--parsable" prints "ID" or "ID;CLUSTER" on its last line.
    const std::string last = output.substr(output.rfind('\n') == std::string::npos ? 0 : output.rfind('\n') + 1);
    const std::string id = last.substr(0, last.find(';'));
    if (!result.status.success() || id.empty() ||
        !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        throw std::runtime_error(fmt::format("sbatch {} {}: {}", script.filename().string(), result.status.describe(),
                                             output.empty() ? "(no output)" : output));
    }
    return id;
}

}  // namespace

SlurmSubmission submit_to_slurm(const Course& course, const BatchOptions& batch, const SlurmOptions& slurm) {
    if (batch.shard) {
        throw UsageError("--slurm and --shard: the job array's tasks get their shards from --slurm");
    }
    if (!batch.only.empty()) {
        throw UsageError("--slurm and --only: regrade a few students with a local `cugrade grade --only`");
    }
    const ClassListing listing = list_class(course, batch);
    if (listing.ids.empty()) {
        throw UsageError(fmt::format("no students in '{}': nothing to submit", batch.submissions.string()));
    }
    SlurmSubmission submission;
    submission.students = listing.ids.size();
    submission.warnings = listing.warnings;
    submission.tasks = slurm.tasks > 0
                           ? slurm.tasks
                           : std::clamp<unsigned>(static_cast<unsigned>((listing.ids.size() + 24) / 25), 1, 32);
    submission.tasks = std::min<unsigned>(submission.tasks, static_cast<unsigned>(listing.ids.size()));
    const fs::path results = fs::absolute(batch.results);
    const fs::path folder = results / "slurm";
    fs::create_directories(folder / "logs");
    fs::create_directories(folder / "attempts");

    std::vector<std::string> task_command = grade_command(course, batch, listing.folder);
    if (batch.force) {
        task_command.push_back("--force");
    }
    if (!batch.diagnose) {
        task_command.push_back("--no-diagnosis");
    }
    // The shard's number comes from Slurm: expanded by the shell, so outside single quotes.
    const std::string task_line =
        fmt::format("{} --shard \"${{SLURM_ARRAY_TASK_ID}}/{}\"", shell_words(task_command), submission.tasks);

    submission.array_script = folder / "grade-array.sh";
    std::string array = sbatch_header(slurm, "cugrade-grade", folder / "logs" / "task-%a-job-%A.out");
    array += fmt::format("#SBATCH --array=0-{}\n#SBATCH --requeue\n", submission.tasks - 1);
    array += fmt::format(
        "# One shard of the class; written by cugrade grade --slurm. A task that Slurm requeues (preemption, a node\n"
        "# that failed) resumes: students already graded are not graded again. After {} starts it gives up, and\n"
        "# the merge job grades what it left.\n"
        "set -u\n"
        "attempts={}/task-${{SLURM_ARRAY_TASK_ID}}\n"
        "echo \"${{SLURM_JOB_ID}} $(hostname)\" >> \"$attempts\"\n"
        "if [ \"$(wc -l < \"$attempts\")\" -gt {} ]; then\n"
        "    echo \"cugrade: shard ${{SLURM_ARRAY_TASK_ID}} started {} times; giving up (see {})\" >&2\n"
        "    exit 3\n"
        "fi\n"
        "exec {}\n",
        slurm.max_attempts, shell_quote((folder / "attempts").string()), slurm.max_attempts, slurm.max_attempts,
        (folder / "logs").string(), task_line);
    write_file_atomically(submission.array_script, array);

    submission.merge_script = folder / "merge.sh";
    std::string merge = sbatch_header(slurm, "cugrade-merge", folder / "logs" / "merge-job-%j.out");
    merge += "# After every task of the array has ended, however it ended: grades what a failed task left (nothing\n"
             "# graded is graded again) and writes the gradebook, the exports and the class report.\n";
    merge += "exec " + shell_words(grade_command(course, batch, listing.folder)) + "\n";
    write_file_atomically(submission.merge_script, merge);

    if (slurm.dry_run) {
        return submission;
    }
    submission.array_job = submit(slurm, {}, submission.array_script);
    submission.merge_job = submit(slurm, {"--dependency=afterany:" + submission.array_job}, submission.merge_script);
    write_file_atomically(folder / "jobs.json", json_text({{"array_job", submission.array_job},
                                                           {"merge_job", submission.merge_job},
                                                           {"tasks", submission.tasks},
                                                           {"students", submission.students}}));
    return submission;
}

}  // namespace cugrade
