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
        words +=
            fmt::format(", waiting without a place for a round of profiles {:.{}f}{}", t.round_wait, decimals, unit);
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
                         const std::vector<RowFigures>& figures, const ClassSources& sources, const ResultsStore& store,
                         const fs::path& results) {
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
    return class_report_html(fmt::format("cugrade: {}", results.filename().string()), exercises, total_possible(plans),
                             students);
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
    return submission_files(course, !options.exercises.empty()       ? options.exercises
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
        write_file(done,
                   fmt::format("{} files, {} bytes, {} entries\n", unpacked.files, unpacked.bytes, unpacked.entries));
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

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The roster's students by id, and what was left out of it.
struct ClassRoster {
    std::map<std::string, RosterEntry> entries;
    std::vector<std::string> warnings;
};

ClassRoster class_roster(const BatchOptions& options) {
    ClassRoster roster;
    if (options.roster) {
        Roster read = read_roster(*options.roster);
        for (auto& entry : read.entries) {
            roster.entries.emplace(entry.id, std::move(entry));
        }
        roster.warnings = std::move(read.warnings);
    }
    return roster;
}

// The class as read before anything is graded: where its folders are, the exercises graded and their plans, its
// students, its roster, and what unpacking and the roster left out.
struct ClassPlan {
    std::optional<LatePolicy> late;
    fs::path folder;
    bool archive = false;  // `folder` is where SUBMISSIONS, an archive, was unpacked
    ExerciseChoice exercises;
    std::vector<ExercisePlan> plans;
    ClassLayout layout;
    ClassRoster roster;
    std::set<std::string> present_ids;
    std::vector<std::string> unpack_warnings;
};

ClassPlan plan_class(const Course& course, const BatchOptions& options) {
    const CourseFile course_file = load_course_file(course.root / "course.yaml", course.exercise_names());
    ClassPlan plan;
    plan.late = course_file.late;
    std::error_code ec;
    if (fs::exists(options.results, ec) && !fs::is_directory(options.results, ec)) {
        throw UsageError(fmt::format("-o '{}' is not a folder", options.results.string()));
    }
    plan.folder = class_folder(course, options, course_file, plan.unpack_warnings);
    plan.exercises = exercises_of_class(course, options, course_file, plan.folder);
    plan.plans = load_plans(course, plan.exercises.names);
    plan.archive = plan.folder != options.submissions;
    plan.layout = read_class_layout(plan.folder, graded_files(plan.plans));
    plan.roster = class_roster(options);
    for (const auto& student : plan.layout.students) {
        plan.present_ids.insert(student.id);
    }
    for (const auto& id : options.only) {
        if (!plan.present_ids.contains(id)) {
            throw UsageError(fmt::format("--only {}: no such student in '{}'", id, options.submissions.string()));
        }
    }
    return plan;
}

// The summary before any grading: the class's layout, its exercises, and what was left out of it.
BatchSummary summary_of_plan(const ClassPlan& plan, const BatchOptions& options) {
    BatchSummary summary;
    summary.exercises = describe(plan.exercises);
    summary.layout =
        plan.archive ? plan.layout.kind + " in " + options.submissions.filename().string() : plan.layout.kind;
    summary.warnings = plan.unpack_warnings;
    summary.warnings.insert(summary.warnings.end(), plan.roster.warnings.begin(), plan.roster.warnings.end());
    for (const auto& ignored : plan.layout.ignored) {
        summary.warnings.push_back("ignored " + ignored);
    }
    summary.warnings.insert(summary.warnings.end(), plan.layout.warnings.begin(), plan.layout.warnings.end());
    if (options.roster) {
        std::vector<std::string> unknown;
        for (const auto& id : plan.present_ids) {
            if (!plan.roster.entries.contains(id)) {
                unknown.push_back(id);
            }
        }
        if (!unknown.empty()) {
            summary.warnings.push_back(fmt::format("not in the roster: {}", fmt::join(unknown, ", ")));
        }
    }
    return summary;
}

GradingContext class_context(const Course& course, const BatchOptions& options, const ClassPlan& plan) {
    GradingSetup setup;
    setup.nvcc = options.nvcc;
    setup.cache_dir = options.cache_dir;
    setup.cache_max_bytes = options.cache_max_bytes;
    setup.submissions = plan.layout.students.empty() ? plan.folder / "none" : plan.layout.students.front().folder;
    setup.required = options.required_sandbox;
    setup.diagnose = options.diagnose;
    GradingContext context = make_grading_context(course, setup);
    if (!options.trace.empty()) {
        context.trace = std::make_shared<RunTrace>(options.trace);
    }
    return context;
}

// The students a batch grades (positions in the class's students) and every student's key.
struct StudentsToGrade {
    std::vector<std::size_t> positions;
    std::vector<std::string> keys;
    std::size_t reused = 0;  // up to date, not graded again
};

// Who to grade: --only names them; otherwise everyone whose results are missing or out of date; of a shard's share.
StudentsToGrade students_to_grade(const ClassPlan& plan, const BatchOptions& options, const ResultsStore& store,
                                  const GpuInfo& gpu) {
    StudentsToGrade chosen;
    chosen.keys.resize(plan.layout.students.size());
    for (std::size_t s = 0; s < plan.layout.students.size(); ++s) {
        const StudentFolder& student = plan.layout.students[s];
        chosen.keys[s] = student_key(student, plan.plans, gpu);
        const bool asked = options.only.empty()
                               ? options.force || store.key(student.id) != chosen.keys[s]
                               : std::find(options.only.begin(), options.only.end(), student.id) != options.only.end();
        if (asked) {
            chosen.positions.push_back(s);
        } else {
            ++chosen.reused;
        }
    }
    if (options.shard) {
        // Positions in the sorted class: every task of a job array splits the same class the same way.
        std::erase_if(chosen.positions,
                      [&](std::size_t s) { return s % options.shard->count != options.shard->index; });
    }
    return chosen;
}

void log_class(BatchProgress& progress, const Course& course, const BatchOptions& options, const ClassPlan& plan,
               const StudentsToGrade& chosen, const BatchSummary& summary) {
    if (!options.course_origin.empty()) {
        progress.line(fmt::format("course: {} ({})", course.root.string(), options.course_origin));
    }
    progress.line(
        fmt::format("{} students in '{}' ({}), {} to grade{}, {} up to date", plan.layout.students.size(),
                    options.submissions.string(), plan.layout.kind, chosen.positions.size(),
                    options.shard ? fmt::format(" in shard {}/{}", options.shard->index, options.shard->count) : "",
                    summary.reused));
    progress.line("exercises: " + summary.exercises);
}

struct BuildTask {
    std::size_t student, exercise;
};

// Every file handed in by the students to grade, in the grading's order.
std::vector<BuildTask> class_builds(const ClassPlan& plan, const std::vector<std::size_t>& to_grade) {
    std::vector<BuildTask> builds;
    for (const std::size_t s : to_grade) {
        for (std::size_t e = 0; e < plan.plans.size(); ++e) {
            if (plan.layout.students[s].files[e].present) {
                builds.push_back({s, e});
            }
        }
    }
    return builds;
}

// A submission built ahead of its grading. `counted`: the build is an item of the build stage's live progress (those
// beside the grading are not).
void prebuild(const GradingContext& context, const ClassPlan& plan, const BuildTask& task, BatchProgress& progress,
              bool counted) {
    const StudentFolder& student = plan.layout.students[task.student];
    const ExercisePlan& exercise_plan = plan.plans[task.exercise];
    bool failed = false;
    try {
        prebuild_submission(context, exercise_plan.exercise, exercise_plan.rubric,
                            read_submission(student.folder, exercise_plan.exercise.submission_file));
    } catch (const std::exception&) {
        failed = true;  // grading builds it again and records what went wrong, in the student's row
    }
    if (counted) {
        progress.done(failed, "");
    }
}

// Each exercise's harness built first (one build each, in parallel); the builds left for beside the grading.
std::vector<BuildTask> build_harnesses(GradingContext& context, const ClassPlan& plan,
                                       const std::vector<BuildTask>& builds, unsigned jobs, bool live,
                                       std::chrono::steady_clock::time_point builds_started, BatchProgress& progress) {
    std::vector<BuildTask> rest;
    if (!context.cache_dir.empty() && !builds.empty()) {
        progress.line(fmt::format("building {} submissions, {} at a time", builds.size(), jobs));
        std::vector<BuildTask> first_of_each;
        std::set<std::size_t> seen;
        for (const auto& task : builds) {
            (seen.insert(task.exercise).second ? first_of_each : rest).push_back(task);
        }
        progress.stage("building", first_of_each.size());
        context.concurrent_jobs = jobs;
        in_parallel(first_of_each.size(), jobs,
                    [&](std::size_t i) { prebuild(context, plan, first_of_each[i], progress, live); });
        progress.finish();
        progress.line(fmt::format("built each exercise's harness in {:.1f} s", seconds_since(builds_started)));
    }
    return rest;
}

// The other submissions build beside the grading, on the cores it leaves: the submissions graded first (one
// a worker, in the order of `builds`, which is the grading's) build their own at once, so theirs come last here
// (found built by then). Joined however the grading ends.
std::jthread build_beside_grading(const GradingContext& context, const ClassPlan& plan,
                                  const std::vector<BuildTask>& builds, std::vector<BuildTask>& rest,
                                  const std::vector<GradingContext>& contexts, unsigned jobs, BatchProgress& progress) {
    if (rest.empty()) {
        return {};
    }
    std::set<std::pair<std::size_t, std::size_t>> graded_first;
    for (std::size_t i = 0; i < std::min(builds.size(), contexts.size()); ++i) {
        graded_first.insert({builds[i].student, builds[i].exercise});
    }
    std::stable_partition(rest.begin(), rest.end(), [&](const BuildTask& task) {
        return !graded_first.contains({task.student, task.exercise});
    });
    const unsigned build_jobs = std::max(1u, jobs - std::min(jobs - 1, submissions_at_once(contexts)));
    return std::jthread([&context, &plan, &rest, &progress, build_jobs] {
        const auto started = std::chrono::steady_clock::now();
        in_parallel(rest.size(), build_jobs, [&](std::size_t i) { prebuild(context, plan, rest[i], progress, false); });
        progress.line(fmt::format("built the other {} submissions in {:.1f} s, {} at a time, beside the grading",
                                  rest.size(), seconds_since(started), build_jobs));
    });
}

// The GPUs graded on, and how many submissions at once on each, said in the log.
void count_gpus(BatchSummary& summary, const std::vector<GradingContext>& contexts, BatchProgress& progress) {
    for (const auto& gpu_context : contexts) {
        if (gpu_context.gpu.available && (summary.gpus.empty() || summary.gpus.back().uuid != gpu_context.gpu.uuid)) {
            summary.gpus.push_back(gpu_context.gpu);
        }
    }
    summary.gpu_jobs =
        submissions_at_once(contexts) / static_cast<unsigned>(std::max<std::size_t>(1, summary.gpus.size()));
    if (!summary.gpus.empty()) {
        progress.line(fmt::format("grading on {} GPU{} ({}), {} submissions at a time on each", summary.gpus.size(),
                                  summary.gpus.size() == 1 ? "" : "s", summary.gpus.front().name, summary.gpu_jobs));
    }
}

// A student's line in the log once graded: status, points, and where the time went.
std::string graded_line(const std::string& id, const GradedStudent& graded, double seconds) {
    const StageSeconds& t = graded.seconds;
    const bool ran = t.startup + t.correctness + t.race_check + t.speed + t.diagnosis + t.waits() > 0.0;
    return fmt::format("{}: {} {} ({:.0f} s{})", id, graded.status, graded.points, seconds,
                       !ran ? std::string()
                            : fmt::format(": build {:.1f}, harness start {:.1f}, correctness {:.1f}, race checks "
                                          "{:.1f}, speed {:.1f}, diagnoses {:.1f}, waiting for the GPU {:.1f}{}",
                                          t.build, t.startup, t.correctness, t.race_check, t.speed, t.diagnosis,
                                          t.gpu_wait, placeless_wait_words(t, 1, "")));
}

// The exercises each student to grade handed in a file for (submission_queue.hpp).
std::vector<std::vector<std::size_t>> files_handed_in(const ClassPlan& plan, const std::vector<std::size_t>& to_grade) {
    std::vector<std::vector<std::size_t>> files(to_grade.size());
    for (std::size_t i = 0; i < to_grade.size(); ++i) {
        for (std::size_t e = 0; e < plan.plans.size(); ++e) {
            if (plan.layout.students[to_grade[i]].files[e].present) {
                files[i].push_back(e);
            }
        }
    }
    return files;
}

// What grading the students adds to the summary.
struct GradingTally {
    std::size_t graded = 0;
    std::size_t elsewhere = 0;  // held or graded by another batch
    StageSeconds stages;
    std::vector<std::string> warnings;  // results not written
};

// The students of a batch while its workers grade them: a task a file handed in (submission_queue.hpp).
class ClassGrading {
public:
    ClassGrading(const ClassPlan& plan, const StudentsToGrade& chosen, const BatchOptions& options,
                 const ResultsStore& store, BatchProgress& progress)
        : plan_(plan),
          chosen_(chosen),
          options_(options),
          store_(store),
          progress_(progress),
          locks_(options.results),
          in_progress_(chosen.positions.size(),
                       StudentInProgress{std::vector<std::optional<ExerciseReport>>(plan.plans.size()), {}}),
          queue_(files_handed_in(plan, chosen.positions)) {}

    // A worker's loop: takes tasks until none is left.
    void work(const GradingContext& worker);
    // Touches the locks held, so that other batches know this one lives.
    void refresh_locks() { locks_.refresh(); }
    GradingTally tally() const { return tally_; }

private:
    // Each student's files as graded so far, and when the first began: the worker that grades the last writes them.
    struct StudentInProgress {
        std::vector<std::optional<ExerciseReport>> graded;
        std::chrono::steady_clock::time_point started;
    };

    bool claim(std::size_t position);
    void write_student(const GradingContext& worker, std::size_t position);

    const ClassPlan& plan_;
    const StudentsToGrade& chosen_;
    const BatchOptions& options_;
    const ResultsStore& store_;
    BatchProgress& progress_;
    StudentLocks locks_;
    std::vector<StudentInProgress> in_progress_;
    SubmissionQueue queue_;
    std::mutex tally_mutex_;
    GradingTally tally_;
};

// Whether a student is this batch's to grade: another batch sharing RESULTS may hold them, or have graded them
// since this one looked.
bool ClassGrading::claim(std::size_t position) {
    const std::size_t s = chosen_.positions[position];
    const StudentFolder& student = plan_.layout.students[s];
    const bool asked = options_.force || !options_.only.empty();
    if (!locks_.try_lock(student.id) || (!asked && store_.key(student.id) == chosen_.keys[s])) {
        locks_.unlock(student.id);
        {
            std::lock_guard lock(tally_mutex_);
            ++tally_.elsewhere;
        }
        progress_.done(false, fmt::format("{}: graded by another batch", student.id));
        return false;
    }
    in_progress_[position].started = std::chrono::steady_clock::now();
    return true;
}

void ClassGrading::work(const GradingContext& worker) {
    GpuGate* const gate = worker.holds_gpu_place ? worker.gpu_gate.get() : nullptr;
    while (true) {
        const GpuGate::Place place(gate);  // given back however this submission's grading ends
        const std::optional<SubmissionQueue::Task> task = queue_.next();
        if (!task) {
            if (gate != nullptr) {
                gate->nothing_left_to_start();
            }
            break;
        }
        if (!queue_.claimed(task->student, [&] { return claim(task->student); })) {
            continue;
        }
        const StudentFolder& student = plan_.layout.students[chosen_.positions[task->student]];
        if (task->exercise) {
            const std::size_t e = *task->exercise;
            in_progress_[task->student].graded[e] = grade_file(worker, student, plan_.plans[e], student.files[e]);
        }
        if (!queue_.finish(task->student)) {
            continue;  // the student's last file graded writes their results
        }
        write_student(worker, task->student);
    }
}

// The student's results written whole, their lock given back, and their line in the log.
void ClassGrading::write_student(const GradingContext& worker, std::size_t position) {
    StudentInProgress& progress_of_student = in_progress_[position];
    const std::size_t s = chosen_.positions[position];
    const StudentFolder& student = plan_.layout.students[s];
    const GradedStudent graded =
        student_results(student, plan_.plans, worker.gpu, std::move(progress_of_student.graded));
    std::string problem;
    try {
        store_.write(student.id, chosen_.keys[s], graded.files);
    } catch (const std::exception& e) {
        problem = fmt::format("{}: results not written: {}", student.id, e.what());
    }
    locks_.unlock(student.id);
    {
        std::lock_guard lock(tally_mutex_);
        ++tally_.graded;
        tally_.stages += graded.seconds;
        if (!problem.empty()) {
            tally_.warnings.push_back(problem);
        }
    }
    progress_.done(counts_as_failed(graded.status),
                   graded_line(student.id, graded, seconds_since(progress_of_student.started)));
}

// Grading: on each GPU several submissions at once (a student's files among them, each graded on its own), their
// correctness cases side by side, each speed test with the GPU to itself (gpu_gate.hpp). Without a GPU grading
// only reads the builds and inspects them. A worker a context; the builds beside the grading are waited for too,
// the students' locks kept fresh meanwhile.
GradingTally grade_students(const ClassPlan& plan, const StudentsToGrade& chosen, const BatchOptions& options,
                            const ResultsStore& store, BatchProgress& progress,
                            const std::vector<GradingContext>& contexts, std::jthread builds_beside) {
    progress.stage("grading", chosen.positions.size());
    ClassGrading grading(plan, chosen, options, store, progress);
    std::atomic<bool> running{true};
    std::thread heartbeat([&] {
        for (int tick = 1; running; ++tick) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            if (tick % 60 == 0) {
                grading.refresh_locks();
            }
        }
    });
    std::vector<std::thread> workers;
    for (const GradingContext& worker_context : contexts) {
        workers.emplace_back([&grading, worker = &worker_context] { grading.work(*worker); });
    }
    for (auto& worker : workers) {
        worker.join();
    }
    if (builds_beside.joinable()) {
        builds_beside.join();
    }
    running = false;
    heartbeat.join();
    return grading.tally();
}

// What the GPUs' gates and rounds of profiles did, once each (workers of one GPU share them).
void add_gpu_figures(BatchSummary& summary, const std::vector<GradingContext>& contexts) {
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
}

// The gradebook's rows: every student of the submissions folder, then roster students who submitted nothing;
// sorted by id.
std::vector<nlohmann::json> gradebook_rows(const ClassPlan& plan, const ResultsStore& store) {
    std::vector<nlohmann::json> rows;
    for (const auto& student : plan.layout.students) {
        try {
            rows.push_back(nlohmann::json::parse(read_file(store.students_dir() / student.id / "row.json")));
        } catch (const std::exception& e) {
            rows.push_back({{"id", student.id},
                            {"status", "error"},
                            {"notes", {std::string("no results: ") + e.what()}},
                            {"exercises", nlohmann::json::object()}});
        }
    }
    for (const auto& [id, entry] : plan.roster.entries) {
        if (!plan.present_ids.contains(id)) {
            rows.push_back({{"id", id},
                            {"status", "missing"},
                            {"notes", {"no folder in the submissions"}},
                            {"exercises", nlohmann::json::object()}});
        }
    }
    std::sort(rows.begin(), rows.end(),
              [](const nlohmann::json& a, const nlohmann::json& b) { return a["id"] < b["id"]; });
    return rows;
}

// The gradebooks, the similarity folders and the class report, from the rows.
void write_class_outputs(const ClassPlan& plan, const std::vector<nlohmann::json>& rows, const ResultsStore& store,
                         const BatchOptions& options, const fs::path& gradebook) {
    std::vector<RowFigures> figures;
    for (const auto& row : rows) {
        figures.push_back(figures_of(row, plan.plans, plan.roster.entries, plan.late));
    }
    write_file_atomically(gradebook, gradebook_csv(plan.plans, rows, figures));
    write_file_atomically(options.results / "gradebook-canvas.csv",
                          canvas_csv(plan.plans, rows, figures, options.canvas_assignment));
    const ClassSources sources = read_class_sources(plan.plans, plan.layout);
    write_similarity_folders(plan.plans, sources, options.results / "similarity");
    write_file_atomically(options.results / "report.html",
                          class_report(plan.plans, rows, figures, sources, store, options.results));
}

void log_totals(BatchProgress& progress, const BatchSummary& summary) {
    progress.line(
        fmt::format("graded {} students in {:.0f} s (builds {:.0f} s, cases {:.0f} s, of which the GPU alone {:.0f} s "
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
        return;  // no cases ran: nothing to say by stage
    }
    progress.line(
        fmt::format("time in each stage, summed over the students graded at once: build and inspect {:.0f} s, harness "
                    "start {:.0f} s, correctness {:.0f} s, race checks {:.0f} s, speed tests {:.0f} s, diagnoses "
                    "{:.0f} s, waiting for the GPU {:.0f} s{}",
                    t.build, t.startup, t.correctness, t.race_check, t.speed, t.diagnosis, t.gpu_wait,
                    placeless_wait_words(t, 0, " s")));
}

// The gradebook and the class report written from every student's results, and the batch's last lines.
BatchSummary write_gradebook(BatchSummary summary, const ClassPlan& plan, const ResultsStore& store,
                             const BatchOptions& options, std::chrono::steady_clock::time_point started,
                             BatchProgress& progress) {
    const std::vector<nlohmann::json> rows = gradebook_rows(plan, store);
    for (const auto& row : rows) {
        const std::string status = row["status"];
        summary.missing += status == "missing";
        summary.failed += counts_as_failed(status);
    }
    summary.students = rows.size();
    summary.gradebook = options.results / "gradebook.csv";
    write_class_outputs(plan, rows, store, options, summary.gradebook);
    summary.total_seconds = seconds_since(started);
    log_totals(progress, summary);
    return summary;
}

}  // namespace

BatchSummary grade_class(const Course& course, const BatchOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    BatchProgress progress(options.log, options.live);
    const ClassPlan plan = plan_class(course, options);
    const ResultsStore store(options.results);
    BatchSummary summary = summary_of_plan(plan, options);
    GradingContext context = class_context(course, options, plan);
    summary.gpu = context.gpu;
    const StudentsToGrade chosen = students_to_grade(plan, options, store, context.gpu);
    summary.reused = chosen.reused;
    if (!options.shard) {
        write_class_listing(options.results, plan.layout);
    }
    log_class(progress, course, options, plan, chosen, summary);

    // Builds on every core: each exercise's harness first; then every other submission, beside the grading of the
    // first students (which finds their builds done, or builds them itself).
    const std::vector<BuildTask> builds = class_builds(plan, chosen.positions);
    const unsigned jobs = options.jobs > 0 ? options.jobs : usable_cores();
    const auto builds_started = std::chrono::steady_clock::now();
    std::vector<BuildTask> rest = build_harnesses(context, plan, builds, jobs, options.live, builds_started, progress);
    summary.build_seconds = seconds_since(builds_started);

    const auto grading_started = std::chrono::steady_clock::now();
    const std::vector<GradingContext> contexts = gpu_contexts(context, options, jobs);
    std::jthread builds_beside = build_beside_grading(context, plan, builds, rest, contexts, jobs, progress);
    count_gpus(summary, contexts, progress);
    const GradingTally tally =
        grade_students(plan, chosen, options, store, progress, contexts, std::move(builds_beside));
    context.concurrent_jobs = 1;
    progress.finish();
    summary.grading_seconds = seconds_since(grading_started);
    summary.graded = tally.graded;
    summary.elsewhere = tally.elsewhere;
    summary.stages = tally.stages;
    summary.warnings.insert(summary.warnings.end(), tally.warnings.begin(), tally.warnings.end());
    add_gpu_figures(summary, contexts);

    if (options.shard) {
        // The job array's merge job writes the gradebook once every task has ended.
        summary.students = chosen.positions.size();
        summary.total_seconds = seconds_since(started);
        progress.line(fmt::format("shard {}/{}: graded {} students in {:.0f} s", options.shard->index,
                                  options.shard->count, summary.graded, summary.total_seconds));
        return summary;
    }
    return write_gradebook(std::move(summary), plan, store, options, started, progress);
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
