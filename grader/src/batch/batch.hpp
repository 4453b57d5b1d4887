// `cugrade grade`: a whole class through the grading pipeline, into RESULTS/ (docs/batch.md). Resumable: each
// student's results are written whole with the key they were graded from, and a rerun grades only students whose
// key changed. A failure on one student is that student's row; the batch goes on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "course/exercise.hpp"
#include "base/gpu.hpp"
#include "sandbox/sandbox.hpp"
#include "base/stage_seconds.hpp"

namespace cugrade {

// One task's share of a class on a cluster: the students at positions index, index + count, ... of the sorted class.
struct Shard {
    unsigned index = 0;
    unsigned count = 1;
};

struct BatchOptions {
    std::filesystem::path submissions;                 // a folder of student folders, or of GitHub Classroom clones
    std::filesystem::path results;                     // RESULTS/
    std::vector<std::string> exercises;                // empty: every exercise of the course
    std::optional<std::filesystem::path> roster;       // CSV: id, name, email, section
    bool force = false;                                // grade every student again
    std::vector<std::string> only;                     // grade these students again (and no one else)
    unsigned jobs = 0;                                 // builds at once (0: one per CPU core)
    std::vector<int> gpus;                             // GPUs to grade on, as the driver numbers them; empty: all
    unsigned gpu_jobs = 0;                             // submissions graded at once on each GPU (0: from the CPU cores)
    Containment required_sandbox = Containment::full;  // a class is graded fully contained unless told otherwise
    std::optional<std::string> nvcc;
    std::filesystem::path cache_dir;  // needed for parallel builds; empty: none
    std::uint64_t cache_max_bytes = 0;
    std::string canvas_assignment = "cugrade";  // the assignment column of gradebook-canvas.csv
    std::string course_origin;                  // how the course was found (course_locator.hpp), logged first
    std::optional<Shard> shard;                 // grade only this share and write no gradebook (a Slurm task)
    std::ostream* log = nullptr;                // a line per student graded
    bool live = false;                          // `log` is a terminal: one progress line, rewritten in place
    bool diagnose = true;                       // rerun failing and slow cases for a diagnosis (--no-diagnosis)
    std::filesystem::path trace;                // a JSON line per harness process (run_trace.hpp); empty: none
};

struct BatchSummary {
    GpuInfo gpu;
    std::string layout;                 // "folders" or "github-classroom"
    std::string exercises;              // those graded, and why: "sum (handed in by some student; not graded: ...)"
    std::size_t students = 0;           // rows of the gradebook (roster-only students included)
    std::size_t graded = 0;             // graded by this run
    std::size_t reused = 0;             // results of an earlier run, still up to date
    std::size_t elsewhere = 0;          // being graded by another batch sharing RESULTS (another Slurm task)
    std::size_t missing = 0;            // nothing submitted
    std::size_t failed = 0;             // rows with status build_failed or error
    std::vector<std::string> warnings;  // folders ignored, roster mismatches, files not where expected
    std::filesystem::path gradebook;
    double build_seconds = 0.0;        // the parallel builds
    double grading_seconds = 0.0;      // the students' cases (the GPU's share of the batch)
    double exclusive_seconds = 0.0;    // of which speed tests and profiled calls had a GPU alone (summed over GPUs)
    std::size_t exclusive_grants = 0;  // how many times
    double emptying_seconds = 0.0;     // and how long the work running before each was left to end, none let in
    std::size_t quiet_rounds = 0;      // times cases set aside (seeming hangs that kept a speed test waiting) ran
    std::size_t counters_rounds = 0;   // rounds of profiles, and the slow speed tests profiled in them
    std::size_t profiled_in_rounds = 0;
    std::vector<GpuInfo> gpus;  // the GPUs it graded on
    unsigned gpu_jobs = 0;      // submissions graded at once on each
    StageSeconds stages;        // the students' grading time by stage, summed over the workers
    double total_seconds = 0.0;
};

// Throws UsageError for bad options or course files (before anything is graded), std::runtime_error when the
// machine cannot contain submissions as well as `required_sandbox` asks.
BatchSummary grade_class(const Course& course, const BatchOptions& options);

// How far a batch is, from its results folder alone (`cugrade grade --status`), for every student of the class it
// was started on (RESULTS/class.json).
// The class's students by where they stand, named as the gradebook's `status` column names them: graded (done),
// build_failed (graded: their own files did not build), error (cugrade failed on them), and not yet graded.
struct BatchStatus {
    std::vector<std::string> done, build_failed, error, running, missing;
    std::size_t total() const {
        return done.size() + build_failed.size() + error.size() + running.size() + missing.size();
    }
};

// Throws UsageError when `results` holds no batch.
BatchStatus batch_status(const std::filesystem::path& results);

// The class a batch grades, found without grading it: the folder of student folders (SUBMISSIONS, or where its
// archive was unpacked, once, under RESULTS/unpacked/) and the students' ids, sorted. Writes RESULTS/class.json.
struct ClassListing {
    std::filesystem::path folder;
    std::vector<std::string> ids;
    std::vector<std::string> warnings;  // what the archive left out, and the folders passed to reach the class
};
ClassListing list_class(const Course& course, const BatchOptions& options);

// Parses "I/N" (0 <= I < N); throws UsageError otherwise.
Shard parse_shard(const std::string& text);

}  // namespace cugrade
