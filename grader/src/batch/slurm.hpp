// `cugrade grade --slurm`: a class graded on a Slurm cluster (docs/cluster.md). The class is split into shards, one
// task of a job array each (`cugrade grade --shard I/N` on its node's GPUs, into the shared RESULTS), then a merge job
// that runs once every task has ended (afterany) grades whatever a failed task left and writes the gradebook, the
// exports and the class report: the batch's resume rules make it the same gradebook as one local `cugrade grade`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "batch/batch.hpp"
#include "course/exercise.hpp"

namespace cugrade {

struct SlurmOptions {
    std::string partition;                 // --partition; empty: the cluster's default
    std::string gres = "gpu:1";            // --gres of every job; empty: none
    unsigned tasks = 0;                    // tasks of the job array (0: one per 25 students, 1 to 32)
    std::string time;                      // --time of each job; empty: the partition's default
    std::string account;                   // --account; empty: none
    std::vector<std::string> sbatch_args;  // passed to sbatch as they are
    bool dry_run = false;                  // write and print the scripts, submit nothing
    unsigned max_attempts = 3;             // a task started this often (requeued after preemption) gives up
    std::string sbatch = "sbatch";
};

struct SlurmSubmission {
    std::filesystem::path array_script;  // RESULTS/slurm/grade-array.sh
    std::filesystem::path merge_script;  // RESULTS/slurm/merge.sh
    std::string array_job, merge_job;    // the job ids sbatch gave; empty on a dry run
    unsigned tasks = 0;
    std::size_t students = 0;
    std::vector<std::string> warnings;  // of the class's archive (ClassListing::warnings)
};

// Throws UsageError for bad options, std::runtime_error when sbatch fails (with what it said).
SlurmSubmission submit_to_slurm(const Course& course, const BatchOptions& batch, const SlurmOptions& slurm);

}  // namespace cugrade
