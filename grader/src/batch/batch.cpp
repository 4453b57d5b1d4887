// `cugrade grade` (batch.hpp): discover the class, build every submission on every core, grade each student whose
// results are missing or out of date, write each student's results whole, then the gradebook from all of them.
#include "batch/batch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "batch/archive.hpp"
#include "batch/batch_progress.hpp"
#include "run/case_runner.hpp"
#include "batch/class_layout.hpp"
#include "batch/class_plans.hpp"
#include "batch/class_report.hpp"
#include "batch/class_sources.hpp"
#include "base/config.hpp"
#include "schedule/counters_rounds.hpp"
#include "course/course_file.hpp"
#include "base/error.hpp"
#include "grading/grading.hpp"
#include "base/json_file.hpp"
#include "course/rubric.hpp"
#include "course/submission.hpp"
#include "course/exercise_choice.hpp"
#include "report/exports.hpp"
#include "base/file_io.hpp"
#include "batch/gradebook.hpp"
#include "batch/grading_contexts.hpp"
#include "base/hash.hpp"
#include "base/parallel.hpp"
#include "batch/results_store.hpp"
#include "batch/roster.hpp"
#include "batch/student_locks.hpp"
#include "batch/submission_queue.hpp"
#include "base/text_safety.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// What a student's results are graded from: cugrade, the GPU, the course's files, and the student's folder (every
// file's name and size, the graded files' contents). Compared in full with key.txt. What the student or the export
// chose (file names, the submission time) is line_text: one line each, control characters and invalid UTF-8 replaced.
std::string student_key(const StudentFolder& student, const std::vector<ExercisePlan>& plans, const GpuInfo& gpu) {
    std::string key = fmt::format("cugrade {} grader {}\ngpu {}\n", CUGRADE_VERSION, CUGRADE_GRADER_DIGEST,
                                  gpu.available ? gpu.name : "none");
    key += fmt::format("submitted {}\n", line_text(student.submitted_at.value_or("unknown")));
    for (std::size_t e = 0; e < plans.size(); ++e) {
        const FoundFile& found = student.files[e];
        key += fmt::format("exercise {}\n{}", plans[e].exercise.name, plans[e].revision);
        std::error_code ec;
        key += found.present && fs::is_regular_file(found.path, ec)
                   ? fmt::format("  submission {}\n", file_digest(found.path))
                   : std::string(found.present ? "  submission not a regular file\n" : "  submission absent\n");
    }
    std::vector<std::string> listing;
    std::error_code ec;
    fs::recursive_directory_iterator it(student.folder, fs::directory_options::skip_permission_denied, ec), end;
    for (std::size_t visited = 0; !ec && it != end && visited < 10000; it.increment(ec), ++visited) {
        if (it->path().filename() == ".git" || it.depth() >= 3) {
            it.disable_recursion_pending();
        }
        if (it->is_regular_file(ec)) {
            listing.push_back(fmt::format("  {} {}", line_text(it->path().lexically_relative(student.folder).string()),
                                          it->file_size(ec)));
        }
    }
    std::sort(listing.begin(), listing.end());
    key += fmt::format("files\n{}\n", fmt::join(listing, "\n"));
    return key;
}

// Where a file that is not graded was found, in the words of the student's row.
std::vector<std::string> file_notes(const ExercisePlan& plan, const FoundFile& found) {
    std::vector<std::string> notes;
    const std::string& expected = plan.exercise.submission_file;
    if (!found.present && found.near_misses.empty()) {
        notes.push_back(fmt::format("{}: no {} in the folder", plan.exercise.name, expected));
    } else if (!found.present) {
        notes.push_back(fmt::format("{}: no {} in the folder; found {}, not graded: the grader reads {} at the top of "
                                    "the student's folder",
                                    plan.exercise.name, expected, fmt::join(found.near_misses, ", "), expected));
    } else if (!found.near_misses.empty()) {
        notes.push_back(fmt::format("{}: graded {}; also found {}, not graded", plan.exercise.name, expected,
                                    fmt::join(found.near_misses, ", ")));
    }
    return notes;
}

// The waits without a place, where there were any: of cases set aside for a quiet GPU, and of slow speed tests for a
// round of profiles; apart from the GPU's other waits, since the submission's place was given up meanwhile.
// `decimals` and `unit`: how the line writes its other figures.
std::string placeless_wait_words(const StageSeconds& t, int decimals, const char* unit) {
    std::string words;
    if (t.quiet_wait > 0.0) {
        words += fmt::format(", waiting without a place for a quiet GPU {:.{}f}{}", t.quiet_wait, decimals, unit);
    }
    if (t.round_wait > 0.0) {
        words += fmt::format(", waiting without a place for a round of profiles {:.{}f}{}", t.round_wait, decimals,
                             unit);
    }
    return words;
}

// One student graded: the files of RESULTS/students/ID/, and the row's status and points for the log.
struct GradedStudent {
    std::map<std::string, std::string> files;  // name -> contents
    std::string status;
    std::string points;  // "41/100"
    StageSeconds seconds;
};

// One file a student handed in, graded: its exercise's report, or what kept it from being graded.
ExerciseReport grade_file(const GradingContext& context, const StudentFolder& student, const ExercisePlan& plan,
                          const FoundFile& found) {
    try {
        return grade_exercise(context, plan.exercise, plan.rubric,
                              read_submission(student.folder, plan.exercise.submission_file));
    } catch (const std::exception& e) {
        return failed_exercise(plan.exercise.name, plan.exercise.title, found.path, plan.rubric.file, e.what());
    }
}

// A student's results from their files graded (`graded[e]` for each exercise whose file was handed in), in the
// plans' order.
GradedStudent student_results(const StudentFolder& student, const std::vector<ExercisePlan>& plans, const GpuInfo& gpu,
                              std::vector<std::optional<ExerciseReport>> graded) {
    Report report;
    report.cugrade_version = CUGRADE_VERSION;
    report.gpu = gpu;
    std::vector<std::string> notes;
    for (std::size_t e = 0; e < plans.size(); ++e) {
        const auto more = file_notes(plans[e], student.files[e]);
        notes.insert(notes.end(), more.begin(), more.end());
        if (graded[e]) {
            report.exercises.push_back(std::move(*graded[e]));
        }
    }
    const nlohmann::json row = student_row(student, plans, report, notes);
    ReportOptions instructor;
    instructor.show_hidden = true;
    GradedStudent result;
    for (const auto& exercise : report.exercises) {
        result.seconds += exercise.seconds;
    }
    result.status = row.at("status").get<std::string>();
    result.points = fmt::format("{}/{}", format_points(report.points()), format_points(report.max_points()));
    result.files = {{"results.json", json_text(report_to_json(report, ReportOptions{}))},
                    {"results-instructor.json", json_text(report_to_json(report, instructor))},
                    {"feedback.md", feedback_markdown(report, notes)},
                    {"gradescope-results.json", json_text(gradescope_results(report, notes))},
                    {"junit.xml", junit_xml(report)},
                    {"row.json", json_text(row)}};
    return result;
}

std::string class_report(const std::vector<ExercisePlan>& plans, const std::vector<nlohmann::json>& rows,
                         const std::vector<RowFigures>& figures, const ClassSources& sources,
                         const ResultsStore& store, const fs::path& results) {
    std::vector<ClassReportExercise> exercises;
    for (const auto& plan : plans) {
        ClassReportExercise e{plan.exercise.name, plan.max_points, "ratio", {}};
        if (plan.rubric.speed) {
            e.speed_metric = plan.rubric.speed->metric == SpeedMetric::bandwidth ? "bandwidth" : "ratio";
            for (const auto& tier : plan.rubric.speed->tiers) {
                e.tier_bounds.push_back(tier.bound);
            }
        }
        exercises.push_back(std::move(e));
    }
    std::vector<ClassReportStudent> students;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        ClassReportStudent s;
        s.id = rows[r].at("id").get<std::string>();
        s.status = rows[r].at("status").get<std::string>();
        s.total = figures[r].total;
        try {
            s.results = nlohmann::json::parse(read_file(store.students_dir() / s.id / "results-instructor.json"));
        } catch (const std::exception&) {
            s.results = nullptr;  // a roster student with nothing submitted
        }
        if (const auto files = sources.find(s.id); files != sources.end()) {
            for (const auto& [exercise, bytes] : files->second) {
                s.normalised_sources[exercise] = strip_comments_and_whitespace(bytes);
            }
        }
        students.push_back(std::move(s));
    }
    return class_report_html(fmt::format("cugrade: {}", results.filename().string()), exercises,
                             total_possible(plans), students);
}

// The submission files of `names`, those of the course: (exercise, file).
std::vector<std::pair<std::string, std::string>> submission_files(const Course& course,
                                                                  const std::vector<std::string>& names) {
    const std::vector<std::string> known = course.exercise_names();
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& name : names) {
        if (std::find(known.begin(), known.end(), name) != known.end()) {
            files.emplace_back(name, load_exercise(course, name).submission_file);
        }
    }
    return files;
}

// The files a student's folder may hold, before the class is read: of -e's exercises, else the assignment's, else
// every exercise of the course.
std::vector<std::pair<std::string, std::string>> expected_files(const Course& course, const BatchOptions& options,
                                                                const CourseFile& course_file) {
    return submission_files(course, !options.exercises.empty()    ? options.exercises
                                    : !course_file.exercises.empty() ? course_file.exercises
                                                                     : course.exercise_names());
}

// The exercises a class is graded on (exercise_choice.hpp); the folders are read for the files handed in only when
// neither -e nor course.yaml names them.
ExerciseChoice exercises_of_class(const Course& course, const BatchOptions& options, const CourseFile& course_file,
                                  const fs::path& folder) {
    const std::vector<std::string> names = course.exercise_names();
    return choose_exercises(names, options.exercises, course_file.exercises, [&] {
        const std::vector<std::pair<std::string, std::string>> files = submission_files(course, names);
        const ClassLayout layout = read_class_layout(folder, files);
        std::vector<std::string> found;
        for (std::size_t e = 0; e < files.size(); ++e) {
            if (std::any_of(layout.students.begin(), layout.students.end(),
                            [&](const StudentFolder& student) { return student.files[e].present; })) {
                found.push_back(files[e].first);
            }
        }
        return found;
    });
}

// RESULTS/class.json: the class a batch was started on, for `cugrade grade --status`.
void write_class_listing(const fs::path& results, const ClassLayout& layout) {
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& student : layout.students) {
        ids.push_back(student.id);
    }
    write_file_atomically(results / "class.json", json_text({{"students", ids}}));
}

// The folder of submissions an archive unpacks to, under RESULTS/unpacked/ by the archive's digest (unpacked once),
// past any folders that only wrap the class (class_layout.hpp: unwrapped_class), each said in `warnings`.
fs::path unpacked_submissions(const fs::path& archive, const fs::path& results,
                              const std::vector<std::pair<std::string, std::string>>& submission_files,
                              std::vector<std::string>& warnings) {
    const fs::path target = results / "unpacked" / hex64(fnv1a64(read_file(archive)));
    const fs::path done = target.string() + ".complete";
    const std::string name = archive.filename().string();
    std::error_code ec;
    if (!fs::exists(done, ec)) {
        fs::remove_all(target, ec);
        const UnpackResult unpacked = unpack_archive(archive, target);
        for (const auto& refused : unpacked.refused) {
            warnings.push_back(fmt::format("{}: left out {}", name, refused));
        }
        if (unpacked.refused_unnamed > 0) {
            warnings.push_back(fmt::format("{}: left out {} more entries", name, unpacked.refused_unnamed));
        }
        write_file(done, fmt::format("{} files, {} bytes, {} entries\n", unpacked.files, unpacked.bytes,
                                     unpacked.entries));
    }
    ClassRoot root = unwrapped_class(target, name, submission_files);
    warnings.insert(warnings.end(), root.warnings.begin(), root.warnings.end());
    return root.folder;
}

// SUBMISSIONS itself, or the folder its archive unpacked to (once); what the archive left out, and the folders
// passed to reach the class, go to `warnings`.
fs::path class_folder(const Course& course, const BatchOptions& options, const CourseFile& course_file,
                      std::vector<std::string>& warnings) {
    std::error_code ec;
    const bool archive = fs::is_regular_file(options.submissions, ec) && is_archive(options.submissions);
    return archive ? unpacked_submissions(options.submissions, options.results,
                                          expected_files(course, options, course_file), warnings)
                   : options.submissions;
}

}  // namespace

BatchSummary grade_class(const Course& course, const BatchOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    BatchProgress progress(options.log, options.live);
    const auto log = [&](const std::string& line) { progress.line(line); };
    const CourseFile course_file = load_course_file(course.root / "course.yaml", course.exercise_names());
    const std::optional<LatePolicy>& late = course_file.late;
    std::vector<std::string> unpack_warnings;
    std::error_code ec;
    if (fs::exists(options.results, ec) && !fs::is_directory(options.results, ec)) {
        throw UsageError(fmt::format("-o '{}' is not a folder", options.results.string()));
    }
    const fs::path folder = class_folder(course, options, course_file, unpack_warnings);
    const ExerciseChoice exercises = exercises_of_class(course, options, course_file, folder);
    const std::vector<ExercisePlan> plans = load_plans(course, exercises.names);
    const bool archive = folder != options.submissions;
    const ClassLayout layout = read_class_layout(folder, graded_files(plans));
    std::map<std::string, RosterEntry> roster;
    std::vector<std::string> roster_warnings;
    if (options.roster) {
        Roster read = read_roster(*options.roster);
        for (auto& entry : read.entries) {
            roster.emplace(entry.id, std::move(entry));
        }
        roster_warnings = std::move(read.warnings);
    }
    std::set<std::string> present_ids;
    for (const auto& student : layout.students) {
        present_ids.insert(student.id);
    }
    for (const auto& id : options.only) {
        if (!present_ids.contains(id)) {
            throw UsageError(fmt::format("--only {}: no such student in '{}'", id, options.submissions.string()));
        }
    }
    const ResultsStore store(options.results);

    BatchSummary summary;
    summary.exercises = describe(exercises);
    summary.layout = archive ? layout.kind + " in " + options.submissions.filename().string() : layout.kind;
    summary.warnings = unpack_warnings;
    summary.warnings.insert(summary.warnings.end(), roster_warnings.begin(), roster_warnings.end());
    for (const auto& ignored : layout.ignored) {
        summary.warnings.push_back("ignored " + ignored);
    }
    summary.warnings.insert(summary.warnings.end(), layout.warnings.begin(), layout.warnings.end());
    if (options.roster) {
        std::vector<std::string> unknown;
        for (const auto& id : present_ids) {
            if (!roster.contains(id)) {
                unknown.push_back(id);
            }
        }
        if (!unknown.empty()) {
            summary.warnings.push_back(fmt::format("not in the roster: {}", fmt::join(unknown, ", ")));
        }
    }

    GradingSetup setup;
    setup.nvcc = options.nvcc;
    setup.cache_dir = options.cache_dir;
    setup.cache_max_bytes = options.cache_max_bytes;
    setup.submissions = layout.students.empty() ? folder / "none" : layout.students.front().folder;
    setup.required = options.required_sandbox;
    setup.diagnose = options.diagnose;
    GradingContext context = make_grading_context(course, setup);
    summary.gpu = context.gpu;
    if (!options.trace.empty()) {
        context.trace = std::make_shared<RunTrace>(options.trace);
    }

    // Who to grade: --only names them; otherwise everyone whose results are missing or out of date.
    std::vector<std::size_t> to_grade;
    std::vector<std::string> keys(layout.students.size());
    for (std::size_t s = 0; s < layout.students.size(); ++s) {
        const StudentFolder& student = layout.students[s];
        keys[s] = student_key(student, plans, context.gpu);
        const bool asked = options.only.empty()
                               ? options.force || store.key(student.id) != keys[s]
                               : std::find(options.only.begin(), options.only.end(), student.id) != options.only.end();
        if (asked) {
            to_grade.push_back(s);
        } else {
            ++summary.reused;
        }
    }
    if (options.shard) {
        // Positions in the sorted class: every task of a job array splits the same class the same way.
        std::erase_if(to_grade, [&](std::size_t s) { return s % options.shard->count != options.shard->index; });
    } else {
        write_class_listing(options.results, layout);
    }
    if (!options.course_origin.empty()) {
        log(fmt::format("course: {} ({})", course.root.string(), options.course_origin));
    }
    log(fmt::format("{} students in '{}' ({}), {} to grade{}, {} up to date", layout.students.size(),
                    options.submissions.string(), layout.kind, to_grade.size(),
                    options.shard ? fmt::format(" in shard {}/{}", options.shard->index, options.shard->count) : "",
                    summary.reused));
    log("exercises: " + summary.exercises);

    // Builds on every core: each exercise's harness first (one build each, in parallel); then every other
    // submission, beside the grading of the first students (which finds their builds done, or builds them itself).
    struct BuildTask {
        std::size_t student, exercise;
    };
    std::vector<BuildTask> builds;
    for (const std::size_t s : to_grade) {
        for (std::size_t e = 0; e < plans.size(); ++e) {
            if (layout.students[s].files[e].present) {
                builds.push_back({s, e});
            }
        }
    }
    const unsigned jobs = options.jobs > 0 ? options.jobs : usable_cores();
    // `counted`: the build is an item of the build stage's progress (those beside the grading are not).
    const auto prebuild = [&](const BuildTask& task, bool counted) {
        const StudentFolder& student = layout.students[task.student];
        const ExercisePlan& plan = plans[task.exercise];
        bool failed = false;
        try {
            prebuild_submission(context, plan.exercise, plan.rubric,
                                read_submission(student.folder, plan.exercise.submission_file));
        } catch (const std::exception&) {
            failed = true;  // grading builds it again and records what went wrong, in the student's row
        }
        if (options.live && counted) {
            progress.done(failed, "");
        }
    };
    const auto seconds_since = [](std::chrono::steady_clock::time_point start) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    const auto builds_started = std::chrono::steady_clock::now();
    std::vector<BuildTask> rest;
    if (!context.cache_dir.empty() && !builds.empty()) {
        log(fmt::format("building {} submissions, {} at a time", builds.size(), jobs));
        std::vector<BuildTask> first_of_each;
        std::set<std::size_t> seen;
        for (const auto& task : builds) {
            (seen.insert(task.exercise).second ? first_of_each : rest).push_back(task);
        }
        progress.stage("building", first_of_each.size());
        context.concurrent_jobs = jobs;
        in_parallel(first_of_each.size(), jobs, [&](std::size_t i) { prebuild(first_of_each[i], true); });
        progress.finish();
        log(fmt::format("built each exercise's harness in {:.1f} s", seconds_since(builds_started)));
    }

    // Grading: on each GPU several submissions at once (a student's files among them, each graded on its own), their
    // correctness cases side by side, each speed test with the GPU to itself (gpu_gate.hpp). Without a GPU grading
    // only reads the builds and inspects them.
    summary.build_seconds = seconds_since(builds_started);
    const auto grading_started = std::chrono::steady_clock::now();
    const std::vector<GradingContext> contexts = gpu_contexts(context, options, jobs);
    // The other submissions build beside the grading, on the cores it leaves: the submissions graded first (one
    // a worker, in the order of `builds`, which is the grading's) build their own at once, so theirs come last here
    // (found built by then).
    std::jthread builds_beside;  // joined however the grading ends
    if (!rest.empty()) {
        std::set<std::pair<std::size_t, std::size_t>> graded_first;
        for (std::size_t i = 0; i < std::min(builds.size(), contexts.size()); ++i) {
            graded_first.insert({builds[i].student, builds[i].exercise});
        }
        std::stable_partition(rest.begin(), rest.end(), [&](const BuildTask& task) {
            return !graded_first.contains({task.student, task.exercise});
        });
        const unsigned build_jobs = std::max(1u, jobs - std::min(jobs - 1, submissions_at_once(contexts)));
        builds_beside = std::jthread([&, build_jobs] {
            const auto started = std::chrono::steady_clock::now();
            in_parallel(rest.size(), build_jobs, [&](std::size_t i) { prebuild(rest[i], false); });
            log(fmt::format("built the other {} submissions in {:.1f} s, {} at a time, beside the grading",
                            rest.size(), seconds_since(started), build_jobs));
        });
    }
    for (const auto& gpu_context : contexts) {
        if (gpu_context.gpu.available && (summary.gpus.empty() || summary.gpus.back().uuid != gpu_context.gpu.uuid)) {
            summary.gpus.push_back(gpu_context.gpu);
        }
    }
    summary.gpu_jobs =
        submissions_at_once(contexts) / static_cast<unsigned>(std::max<std::size_t>(1, summary.gpus.size()));
    if (!summary.gpus.empty()) {
        log(fmt::format("grading on {} GPU{} ({}), {} submissions at a time on each", summary.gpus.size(),
                        summary.gpus.size() == 1 ? "" : "s", summary.gpus.front().name, summary.gpu_jobs));
    }
    progress.stage("grading", to_grade.size());
    std::mutex summary_mutex;
    StudentLocks locks(options.results);
    // Each student's files as graded so far, and when the first began: the worker that grades the last writes them.
    struct StudentInProgress {
        std::vector<std::optional<ExerciseReport>> graded;
        std::chrono::steady_clock::time_point started;
    };
    std::vector<StudentInProgress> in_progress(to_grade.size());
    std::vector<std::vector<std::size_t>> files_handed_in(to_grade.size());
    for (std::size_t i = 0; i < to_grade.size(); ++i) {
        in_progress[i].graded.resize(plans.size());
        for (std::size_t e = 0; e < plans.size(); ++e) {
            if (layout.students[to_grade[i]].files[e].present) {
                files_handed_in[i].push_back(e);
            }
        }
    }
    SubmissionQueue queue(files_handed_in);
    std::atomic<bool> grading{true};
    std::thread heartbeat([&] {
        for (int tick = 1; grading; ++tick) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            if (tick % 60 == 0) {
                locks.refresh();
            }
        }
    });
    // Whether a student is this batch's to grade: another batch sharing RESULTS may hold them, or have graded them
    // since this one looked.
    const auto claim = [&](std::size_t position) {
        const std::size_t s = to_grade[position];
        const StudentFolder& student = layout.students[s];
        const bool asked = options.force || !options.only.empty();
        if (!locks.try_lock(student.id) || (!asked && store.key(student.id) == keys[s])) {
            locks.unlock(student.id);
            {
                std::lock_guard lock(summary_mutex);
                ++summary.elsewhere;
            }
            progress.done(false, fmt::format("{}: graded by another batch", student.id));
            return false;
        }
        in_progress[position].started = std::chrono::steady_clock::now();
        return true;
    };
    std::vector<std::thread> workers;
    for (const GradingContext& worker_context : contexts) {
        workers.emplace_back([&, worker = &worker_context] {
            GpuGate* const gate = worker->holds_gpu_place ? worker->gpu_gate.get() : nullptr;
            while (true) {
                const GpuGate::Place place(gate);  // given back however this submission's grading ends
                const std::optional<SubmissionQueue::Task> task = queue.next();
                if (!task) {
                    if (gate != nullptr) {
                        gate->nothing_left_to_start();
                    }
                    break;
                }
                if (!queue.claimed(task->student, [&] { return claim(task->student); })) {
                    continue;
                }
                StudentInProgress& progress_of_student = in_progress[task->student];
                const StudentFolder& student = layout.students[to_grade[task->student]];
                if (task->exercise) {
                    const std::size_t e = *task->exercise;
                    progress_of_student.graded[e] = grade_file(*worker, student, plans[e], student.files[e]);
                }
                if (!queue.finish(task->student)) {
                    continue;  // the student's last file graded writes their results
                }
                const std::size_t s = to_grade[task->student];
                const GradedStudent graded =
                    student_results(student, plans, worker->gpu, std::move(progress_of_student.graded));
                std::string problem;
                try {
                    store.write(student.id, keys[s], graded.files);
                } catch (const std::exception& e) {
                    problem = fmt::format("{}: results not written: {}", student.id, e.what());
                }
                locks.unlock(student.id);
                {
                    std::lock_guard lock(summary_mutex);
                    ++summary.graded;
                    summary.stages += graded.seconds;
                    if (!problem.empty()) {
                        summary.warnings.push_back(problem);
                    }
                }
                const StageSeconds& t = graded.seconds;
                const bool ran = t.startup + t.correctness + t.race_check + t.speed + t.diagnosis + t.waits() > 0.0;
                progress.done(counts_as_failed(graded.status),
                              fmt::format("{}: {} {} ({:.0f} s{})", student.id, graded.status, graded.points,
                                          seconds_since(progress_of_student.started),
                                          !ran ? std::string()
                                               : fmt::format(": build {:.1f}, harness start {:.1f}, correctness "
                                                             "{:.1f}, race checks {:.1f}, speed {:.1f}, diagnoses "
                                                             "{:.1f}, waiting for the GPU {:.1f}{}",
                                                             t.build, t.startup, t.correctness, t.race_check,
                                                             t.speed, t.diagnosis, t.gpu_wait,
                                                             placeless_wait_words(t, 1, ""))));
            }
        });
    }
    for (auto& worker : workers) {
        worker.join();
    }
    if (builds_beside.joinable()) {
        builds_beside.join();
    }
    context.concurrent_jobs = 1;
    grading = false;
    heartbeat.join();
    progress.finish();
    summary.grading_seconds = seconds_since(grading_started);
    std::set<const GpuGate*> gates;
    for (const auto& gpu_context : contexts) {
        if (gpu_context.gpu_gate && gates.insert(gpu_context.gpu_gate.get()).second) {
            summary.exclusive_seconds += gpu_context.gpu_gate->exclusive_seconds();
            summary.exclusive_grants += gpu_context.gpu_gate->exclusive_grants();
            summary.emptying_seconds += gpu_context.gpu_gate->emptying_seconds();
            summary.quiet_rounds += gpu_context.gpu_gate->quiet_rounds();
        }
    }
    std::set<const CountersRounds*> profile_rounds;
    for (const auto& gpu_context : contexts) {
        if (gpu_context.counters_rounds && profile_rounds.insert(gpu_context.counters_rounds.get()).second) {
            summary.counters_rounds += gpu_context.counters_rounds->rounds();
            summary.profiled_in_rounds += gpu_context.counters_rounds->requests();
        }
    }

    if (options.shard) {
        // The job array's merge job writes the gradebook once every task has ended.
        summary.students = to_grade.size();
        summary.total_seconds = seconds_since(started);
        log(fmt::format("shard {}/{}: graded {} students in {:.0f} s", options.shard->index, options.shard->count,
                        summary.graded, summary.total_seconds));
        return summary;
    }

    // The gradebook: every student of the submissions folder, then roster students who submitted nothing.
    std::vector<nlohmann::json> rows;
    for (const auto& student : layout.students) {
        try {
            rows.push_back(nlohmann::json::parse(read_file(store.students_dir() / student.id / "row.json")));
        } catch (const std::exception& e) {
            rows.push_back({{"id", student.id}, {"status", "error"}, {"notes", {std::string("no results: ") + e.what()}},
                            {"exercises", nlohmann::json::object()}});
        }
    }
    for (const auto& [id, entry] : roster) {
        if (!present_ids.contains(id)) {
            rows.push_back({{"id", id}, {"status", "missing"}, {"notes", {"no folder in the submissions"}},
                            {"exercises", nlohmann::json::object()}});
        }
    }
    std::sort(rows.begin(), rows.end(),
              [](const nlohmann::json& a, const nlohmann::json& b) { return a["id"] < b["id"]; });
    for (const auto& row : rows) {
        const std::string status = row["status"];
        summary.missing += status == "missing";
        summary.failed += counts_as_failed(status);
    }
    summary.students = rows.size();
    summary.gradebook = options.results / "gradebook.csv";
    std::vector<RowFigures> figures;
    for (const auto& row : rows) {
        figures.push_back(figures_of(row, plans, roster, late));
    }
    write_file_atomically(summary.gradebook, gradebook_csv(plans, rows, figures));
    write_file_atomically(options.results / "gradebook-canvas.csv",
                          canvas_csv(plans, rows, figures, options.canvas_assignment));
    const ClassSources sources = read_class_sources(plans, layout);
    write_similarity_folders(plans, sources, options.results / "similarity");
    write_file_atomically(options.results / "report.html",
                          class_report(plans, rows, figures, sources, store, options.results));
    summary.total_seconds = seconds_since(started);
    log(fmt::format("graded {} students in {:.0f} s (builds {:.0f} s, cases {:.0f} s, of which the GPU alone {:.0f} s "
                    "for {} speed tests and profiled calls, and {:.0f} s emptied for them{}{}); gradebook: {}",
                    summary.graded, summary.total_seconds, summary.build_seconds, summary.grading_seconds,
                    summary.exclusive_seconds, summary.exclusive_grants, summary.emptying_seconds,
                    summary.counters_rounds == 0
                        ? std::string()
                        : fmt::format("; {} slow speed test{} profiled in {} round{}", summary.profiled_in_rounds,
                                      summary.profiled_in_rounds == 1 ? "" : "s", summary.counters_rounds,
                                      summary.counters_rounds == 1 ? "" : "s"),
                    summary.quiet_rounds == 0
                        ? std::string()
                        : fmt::format("; cases that kept a speed test waiting set aside and run again in {} quiet "
                                      "round{}",
                                      summary.quiet_rounds, summary.quiet_rounds == 1 ? "" : "s"),
                    summary.gradebook.string()));
    const StageSeconds& t = summary.stages;
    if (summary.gpus.empty()) {
        return summary;  // no cases ran: nothing to say by stage
    }
    log(fmt::format("time in each stage, summed over the students graded at once: build and inspect {:.0f} s, harness "
                    "start {:.0f} s, correctness {:.0f} s, race checks {:.0f} s, speed tests {:.0f} s, diagnoses "
                    "{:.0f} s, waiting for the GPU {:.0f} s{}",
                    t.build, t.startup, t.correctness, t.race_check, t.speed, t.diagnosis, t.gpu_wait,
                    placeless_wait_words(t, 0, " s")));
    return summary;
}

ClassListing list_class(const Course& course, const BatchOptions& options) {
    std::error_code ec;
    fs::create_directories(options.results, ec);
    ClassListing listing;
    const CourseFile course_file = load_course_file(course.root / "course.yaml", course.exercise_names());
    listing.folder = fs::absolute(class_folder(course, options, course_file, listing.warnings));
    const ExerciseChoice exercises = exercises_of_class(course, options, course_file, listing.folder);
    const ClassLayout layout = read_class_layout(listing.folder, graded_files(load_plans(course, exercises.names)));
    for (const auto& student : layout.students) {
        listing.ids.push_back(student.id);
    }
    write_class_listing(options.results, layout);
    return listing;
}

Shard parse_shard(const std::string& text) {
    const auto slash = text.find('/');
    try {
        if (slash != std::string::npos) {
            std::size_t used = 0;
            const unsigned long index = std::stoul(text.substr(0, slash), &used);
            const bool index_whole = used == slash;
            const unsigned long count = std::stoul(text.substr(slash + 1), &used);
            if (index_whole && used == text.size() - slash - 1 && count > 0 && index < count && count < 100000) {
                return {static_cast<unsigned>(index), static_cast<unsigned>(count)};
            }
        }
    } catch (const std::exception&) {
    }
    throw UsageError(fmt::format("--shard {}: expected I/N with 0 <= I < N, such as 0/4", text));
}

BatchStatus batch_status(const fs::path& results) {
    nlohmann::json listing;
    try {
        listing = nlohmann::json::parse(read_file(results / "class.json"));
    } catch (const std::exception&) {
        throw UsageError(fmt::format("'{}' holds no batch: no class.json (it is written when `cugrade grade` starts)",
                                     results.string()));
    }
    BatchStatus status;
    for (const auto& entry : listing.value("students", nlohmann::json::array())) {
        const std::string id = entry.get<std::string>();
        if (StudentLocks::held(results, id)) {
            status.running.push_back(id);
            continue;
        }
        try {
            const auto row = nlohmann::json::parse(read_file(results / "students" / id / "row.json"));
            const std::string row_status = row.value("status", "");
            (row_status == "build_failed" ? status.build_failed
             : row_status == "error"      ? status.error
                                          : status.done)
                .push_back(id);
        } catch (const std::exception&) {
            status.missing.push_back(id);
        }
    }
    return status;
}

}  // namespace cugrade
