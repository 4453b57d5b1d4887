// The cugrade command line: parses options, calls the library, prints, and maps the outcome to an exit code.
#include <CLI/CLI.hpp>
#include <unistd.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "base/config.hpp"
#include "batch/batch.hpp"
#include "grading/bench.hpp"
#include "build/build.hpp"
#include "grading/check.hpp"
#include "course/course_locator.hpp"
#include "authoring/handout.hpp"
#include "base/error.hpp"
#include "base/exit_codes.hpp"
#include "base/json_file.hpp"
#include "authoring/new_exercise.hpp"
#include "sandbox/process.hpp"
#include "batch/slurm.hpp"
#include "base/file_io.hpp"
#include "base/text_safety.hpp"

namespace {

namespace fs = std::filesystem;
using namespace cugrade;

CourseChoice choose_course(const std::string& option) {
    const char* environment = std::getenv("CUGRADE_COURSE");
    std::error_code ec;
    return find_course(option, environment != nullptr ? environment : "", fs::current_path(ec), "/proc/self/exe");
}

fs::path course_root(const std::string& option) { return choose_course(option).root; }

// The course for a command that needs the references and the hidden cases, which a student kit does not have.
Course full_course(const std::string& option, const char* command) {
    Course course = open_course(course_root(option));
    if (course.kit) {
        throw UsageError(fmt::format("'{}' is a student kit, which has no references or hidden cases: {} runs with "
                                     "the full course",
                                     course.root.string(), command));
    }
    return course;
}

// A whole number of elements from 1 to max_elements, written in digits alone ("-5", "1e6" and "0" are refused).
std::optional<std::uint64_t> parse_extent(const std::string& text) {
    if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos) {
        return std::nullopt;
    }
    const std::uint64_t value = std::stoull(text);
    return value >= 1 && value <= max_elements ? std::optional(value) : std::nullopt;
}

// "k=1024" -> {"k", 1024}: a parameter's name and a finite number.
std::pair<std::string, double> parse_parameter(const std::string& text) {
    const auto equals = text.find('=');
    const std::string name = text.substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : text.substr(equals + 1);
    char* end = nullptr;
    const double number = value.empty() ? 0.0 : std::strtod(value.c_str(), &end);
    if (name.empty() || value.empty() || end != value.c_str() + value.size() || !std::isfinite(number)) {
        throw UsageError(fmt::format("--parameter '{}': give NAME=NUMBER, such as k=1024", text));
    }
    return {name, number};
}

Shape parse_size(const std::string& text) {
    if (const auto n = parse_extent(text)) {
        return {*n};
    }
    throw UsageError(fmt::format("--size takes a number of elements from 1 to {}, such as 16777216, not '{}'",
                                 max_elements, text));
}

Shape parse_shape(const std::string& text) {
    const auto x = text.find('x');
    if (x != std::string::npos) {
        const auto rows = parse_extent(text.substr(0, x));
        const auto cols = parse_extent(text.substr(x + 1));
        if (rows && cols && element_count({*rows, *cols}) <= max_elements) {
            return {*rows, *cols};
        }
    }
    throw UsageError(fmt::format("--shape takes ROWSxCOLS, each at least 1 and at most {} elements in all, such as "
                                 "8192x8192, not '{}'",
                                 max_elements, text));
}

// Everything cugrade says on the terminal goes through here: ids, names, paths and error messages can hold a
// student's text, and none of its control sequences may reach the terminal (terminal_text).
void print(std::ostream& out, const std::string& text) { out << terminal_text(text) << std::flush; }

int terminal_width() {
    if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
        const int width = std::atoi(columns);
        if (width >= 60) {
            return width;
        }
    }
    return 110;
}

// "cugrade new --help": the help of the subcommand the command line named, else cugrade's own.
std::string help_command(const CLI::App& app) {
    const std::vector<CLI::App*> named = app.get_subcommands();
    return named.empty() ? "cugrade --help" : fmt::format("cugrade {} --help", named.back()->get_name());
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"cugrade: builds, checks and times CUDA kernel exercises against their rubrics", "cugrade"};
    app.set_version_flag("--version", std::string("cugrade ") + CUGRADE_VERSION);
    app.require_subcommand(1);

    CheckOptions options;
    std::string submission_dir = ".";
    std::string rubric;
    std::string json_file;
    std::string course;
    std::string cache_dir;
    std::string nvcc;
    bool no_cache = false;
    bool show_hidden = false;

    CLI::App* check_command = app.add_subcommand("check", "grade the submission in a folder");
    check_command->add_option("submission_dir", submission_dir, "the folder that holds the submission (default: .)");
    check_command->add_option("--exercise,-e", options.exercises,
                              "grade only this exercise (repeatable; default: every exercise whose file is there)");
    check_command->add_option("--rubric", rubric, "grade with this rubric instead of rubrics/NAME.yaml");
    check_command->add_option("--json", json_file, "also write the results as JSON to this file ('-': stdout)");
    check_command->add_option("--course", course, "the folder with exercises/, reference/ and rubrics/");
    check_command->add_option("--cache-dir", cache_dir, "where builds are cached (default: ~/.cache/cugrade)");
    check_command->add_flag("--no-cache", no_cache, "build from scratch and keep nothing");
    check_command->add_option("--nvcc", nvcc, "the nvcc to build with");
    check_command->add_flag("--show-hidden", show_hidden, "show the names and details of hidden cases (instructors)");
    bool no_diagnosis = false;
    check_command->add_flag("--no-diagnosis", no_diagnosis,
                            "skip the reruns that diagnose failing cases (compute-sanitizer) and a slow speed test "
                            "(Nsight Compute)");
    bool cpu = false;
    bool no_cpu = false;
    auto* cpu_flag = check_command->add_flag(
        "--cpu", cpu,
        "a self-check without an NVIDIA GPU: the correctness cases run on the CPU (the harness and your kernels "
        "compiled with the system's C++ compiler); speed tests are skipped, and it is never a grade. The default where "
        "no NVIDIA GPU is usable");
    check_command->add_flag("--no-cpu", no_cpu, "without an NVIDIA GPU, only build: no CPU self-check")
        ->excludes(cpu_flag);
    std::string required_sandbox = "none";
    check_command
        ->add_option("--require-sandbox", required_sandbox,
                     "grade nothing unless submissions can be contained at least this well: none, files (the host's "
                     "files hidden) or full (also other processes and the network)")
        ->check(CLI::IsMember({"none", "files", "full"}));

    BatchOptions batch;
    std::string batch_submissions;
    std::string batch_results;
    std::string batch_roster;
    std::string batch_sandbox = "full";
    CLI::App* grade_command = app.add_subcommand("grade", "grade a whole class into a gradebook (docs/batch.md)");
    grade_command->add_option("submissions", batch_submissions,
                              "a folder with one folder per student, GitHub Classroom clones, a Gradescope export, or "
                              "a .zip or .tar.gz of one of these");
    grade_command->add_option("-o,--output", batch_results, "the results folder (created; a rerun resumes it)");
    std::string batch_status_dir, batch_shard;
    SlurmOptions slurm;
    bool use_slurm = false;
    grade_command->add_option("--status", batch_status_dir,
                              "say how far the batch in this results folder is (done, running, failed, missing)");
    grade_command->add_option("--shard", batch_shard,
                              "grade only share I of N of the class (I/N), write no gradebook: a cluster task");
    grade_command->add_flag("--slurm", use_slurm, "submit the batch to Slurm as a job array and a merge job");
    grade_command->add_option("--partition", slurm.partition, "with --slurm: the partition");
    grade_command->add_option("--gres", slurm.gres, "with --slurm: the generic resources of each job (default gpu:1)");
    grade_command->add_option("--tasks", slurm.tasks, "with --slurm: tasks of the job array (default: one per 25 "
                                                      "students, at most 32)");
    grade_command->add_option("--time", slurm.time, "with --slurm: the time limit of each job, as sbatch takes it");
    grade_command->add_option("--account", slurm.account, "with --slurm: the account to charge");
    grade_command->add_option("--sbatch-arg", slurm.sbatch_args, "with --slurm: one more sbatch option (repeatable)");
    grade_command->add_flag("--dry-run", slurm.dry_run, "with --slurm: write and print the job scripts, submit nothing");
    grade_command->add_option("--exercise,-e", batch.exercises, "grade only this exercise (repeatable; default: course.yaml's exercises, else those some student handed in)");
    grade_command->add_option("--roster", batch_roster, "a CSV of the class: id, name, email, section");
    grade_command->add_flag("--force", batch.force, "grade every student again, even with up-to-date results");
    grade_command->add_flag("--no-diagnosis", no_diagnosis,
                            "skip the reruns that diagnose failing cases and slow speed tests");
    grade_command->add_option("--trace", batch.trace,
                              "append a JSON line per harness process to this file: its submission, tool, cases, "
                              "seconds and waits (names hidden cases: for instructors)");
    grade_command->add_option("--only", batch.only, "grade this student again, and no one else (repeatable)");
    grade_command->add_option("--jobs,-j", batch.jobs, "builds at once (default: one per CPU core)");
    grade_command->add_option("--gpus", batch.gpus, "grade on these GPUs, e.g. 0,1 (default: every visible GPU)")
        ->delimiter(',');
    grade_command->add_option("--gpu-jobs", batch.gpu_jobs,
                              "submissions graded at once on each GPU; their speed tests still take turns (default: "
                              "from the CPU cores and the GPU's memory, at most 8)");
    grade_command->add_option("--canvas-assignment", batch.canvas_assignment,
                              "the assignment column of gradebook-canvas.csv (default: cugrade)");
    grade_command->add_option("--course", course, "the folder with exercises/, reference/ and rubrics/");
    grade_command->add_option("--cache-dir", cache_dir, "where builds are cached (default: ~/.cache/cugrade)");
    grade_command->add_option("--nvcc", nvcc, "the nvcc to build with");
    grade_command
        ->add_option("--require-sandbox", batch_sandbox,
                     "grade nothing unless submissions can be contained at least this well (default: full)")
        ->check(CLI::IsMember({"none", "files", "full"}));

    BenchOptions bench_options;
    std::vector<std::string> bench_sizes;
    std::vector<std::string> bench_shapes;
    CLI::App* bench_command = app.add_subcommand(
        "bench", "time each exercise's reference against its library baselines and the copy bandwidth");
    bench_command->add_option("--exercise,-e", bench_options.exercises, "only this exercise (repeatable)");
    bench_command->add_option("--size", bench_sizes, "element count for vector exercises (repeatable)");
    bench_command->add_option("--shape", bench_shapes, "ROWSxCOLS for matrix exercises (repeatable)");
    std::vector<std::string> bench_parameters;
    bench_command->add_option("--parameter", bench_parameters,
                              "NAME=VALUE: a parameter of the speed test, for the exercises that have it (matmul's "
                              "inner size: k=1024; repeatable)");
    bench_command->add_option("--json", json_file, "also write the figures as JSON to this file ('-': stdout)");
    bench_command->add_option("--course", course, "the folder with exercises/, reference/ and rubrics/");
    bench_command->add_option("--cache-dir", cache_dir, "where builds are cached (default: ~/.cache/cugrade)");
    bench_command->add_option("--nvcc", nvcc, "the nvcc to build with");

    std::string handout_output;
    HandoutOptions handout_options;
    CLI::App* handout_command = app.add_subcommand(
        "handout", "write the student kit: the course without its references or hidden cases (docs/handout.md)");
    handout_command->add_option("output", handout_output, "the kit's folder, new or a kit made before; OUTPUT.tar.gz "
                                                          "is written beside it")
        ->required();
    handout_command->add_option("--exercise,-e", handout_options.exercises,
                                "only this exercise (repeatable; default: all)");
    handout_command
        ->add_option("--arch", handout_options.arches,
                     "SASS for this architecture, e.g. sm_90 (repeatable; default: every one from sm_75 that nvcc "
                     "builds)")
        ->delimiter(',');
    handout_command->add_option("--course", course, "the folder with exercises/, reference/ and rubrics/");
    handout_command->add_option("--nvcc", nvcc, "the nvcc to build with");

    std::string new_name;
    std::string new_title;
    CLI::App* new_command = app.add_subcommand(
        "new", "add an exercise to the course that builds and grades at once, to make your own (docs/authoring.md)");
    new_command->add_option("name", new_name, "the exercise's name: its file, header and entry point")->required();
    new_command->add_option("--title", new_title, "its title (default: from the name)");
    new_command->add_option("--course", course, "the folder with exercises/, reference/ and rubrics/");
    new_command->add_option("--nvcc", nvcc, "the nvcc that checks the name against the C, C++ and CUDA headers");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {
            return app.exit(e);  // --help, --version
        }
        print(std::cerr,
              fmt::format("cugrade: error: {}\n(run '{}' for the options)\n", e.what(), help_command(app)));
        return to_int(ExitCode::invalid);
    }

    try {
        kill_children_on_interrupt();
        options.submission_dir = submission_dir;
        if (!rubric.empty()) {
            options.rubric = rubric;
        }
        if (!nvcc.empty()) {
            options.nvcc = nvcc;
        }
        options.cache_dir = no_cache ? fs::path{} : cache_dir.empty() ? default_cache_dir() : fs::path(cache_dir);
        options.cache_max_bytes = default_cache_limit();
        options.progress = &std::cerr;
        options.required_sandbox = containment_from_string(required_sandbox).value_or(Containment::none);

        if (grade_command->parsed() && !batch_status_dir.empty()) {
            const BatchStatus status = batch_status(batch_status_dir);
            print(std::cout, fmt::format("{} students: {} done, {} build_failed, {} error, {} running, {} missing\n",
                                         status.total(), status.done.size(), status.build_failed.size(),
                                         status.error.size(), status.running.size(), status.missing.size()));
            for (const auto& [label, ids] :
                 {std::pair{"running", &status.running}, std::pair{"build_failed", &status.build_failed},
                  std::pair{"error", &status.error}, std::pair{"missing", &status.missing}}) {
                if (!ids->empty()) {
                    print(std::cout, fmt::format("{}: {}\n", label, fmt::join(*ids, ", ")));
                }
            }
            return to_int(status.missing.empty() && status.running.empty() ? ExitCode::passed : ExitCode::failed);
        }
        if (grade_command->parsed()) {
            if (batch_submissions.empty() || batch_results.empty()) {
                throw UsageError("grade needs the submissions and -o RESULTS (or --status RESULTS)");
            }
            if (!batch_shard.empty()) {
                batch.shard = parse_shard(batch_shard);
            }
            batch.submissions = batch_submissions;
            batch.results = batch_results;
            if (!batch_roster.empty()) {
                batch.roster = batch_roster;
            }
            batch.required_sandbox = containment_from_string(batch_sandbox).value_or(Containment::full);
            batch.nvcc = options.nvcc;
            batch.cache_dir = cache_dir.empty() ? default_cache_dir() : fs::path(cache_dir);
            batch.cache_max_bytes = options.cache_max_bytes;
            batch.log = &std::cerr;
            batch.live = ::isatty(STDERR_FILENO) != 0;
            if (use_slurm) {
                const SlurmSubmission submitted = submit_to_slurm(full_course(course, "grade"), batch, slurm);
                for (const auto& warning : submitted.warnings) {
                    std::cerr << "cugrade: warning: " << warning << "\n";
                }
                if (slurm.dry_run) {
                    print(std::cout, fmt::format("# {}\n{}\n# {}\n{}", submitted.array_script.string(),
                                                 read_file(submitted.array_script), submitted.merge_script.string(),
                                                 read_file(submitted.merge_script)));
                    return to_int(ExitCode::passed);
                }
                print(std::cout, fmt::format(
                    "submitted {} students in {} tasks: job array {}, merge job {} (runs when every task has ended)\n"
                    "follow them: squeue -j {},{}   or   cugrade grade --status {}\n"
                    "task logs: {}\n",
                    submitted.students, submitted.tasks, submitted.array_job, submitted.merge_job,
                    submitted.array_job, submitted.merge_job, batch.results.string(),
                    (batch.results / "slurm" / "logs").string()));
                return to_int(ExitCode::passed);
            }
            const CourseChoice chosen = choose_course(course);
            batch.course_origin = chosen.origin;
            batch.diagnose = !no_diagnosis;
            const BatchSummary summary = grade_class(full_course(chosen.root.string(), "grade"), batch);
            for (const auto& warning : summary.warnings) {
                print(std::cerr, "cugrade: warning: " + warning + "\n");
            }
            if (batch.shard) {
                print(std::cout, fmt::format("shard {}/{}: {} students graded now, {} by another batch\n",
                                             batch.shard->index, batch.shard->count, summary.graded,
                                             summary.elsewhere));
                return to_int(summary.gpu.available ? ExitCode::passed : ExitCode::skipped);
            }
            print(std::cout,
                  fmt::format("{} students ({} graded now, {} up to date, {} missing, {} failed) on GPU {}\n"
                              "exercises: {}\ngradebook: {}\n",
                              summary.students, summary.graded, summary.reused, summary.missing, summary.failed,
                              summary.gpu.available ? summary.gpu.name : "none: " + summary.gpu.unavailable_reason,
                              summary.exercises, summary.gradebook.string()));
            return to_int(summary.gpu.available ? ExitCode::passed : ExitCode::skipped);
        }
        if (handout_command->parsed()) {
            const Toolchain toolchain = find_toolchain(options.nvcc);
            const CourseChoice chosen = choose_course(course);
            print(std::cerr, fmt::format("cugrade: course: {} ({})\n", chosen.root.string(), chosen.origin));
            handout_options.output = handout_output;
            handout_options.progress = [](const std::string& line) { print(std::cerr, "cugrade: " + line + "\n"); };
            const Handout handout = make_handout(open_course(chosen.root), toolchain, handout_options);
            print(std::cout, fmt::format("kit: {}\n     {}\nexercises: {}\nbuilt with CUDA {} for {}, and PTX of {} "
                                         "for newer GPUs\n{}\n",
                                         handout.folder.string(), handout.tarball.string(),
                                         fmt::join(handout.kit.exercises, ", "), handout.kit.release,
                                         fmt::join(handout.kit.arches, " "), handout.kit.arches.back(),
                                         handout.kit.cpu_target.empty()
                                             ? "no CPU self-check (see above why)"
                                             : "CPU self-check without a GPU on " + handout.kit.cpu_target));
            return to_int(ExitCode::passed);
        }
        if (new_command->parsed()) {
            const Course target = full_course(course, "new");
            const auto written = new_exercise(target.root, new_name,
                                              new_title.empty() ? default_title(new_name) : new_title,
                                              find_toolchain(options.nvcc));
            print(std::cout, fmt::format("exercise {} in {}:\n", new_name, target.root.string()));
            for (const auto& path : written) {
                print(std::cout, "  " + path.string() + "\n");
            }
            print(std::cout, fmt::format("try it: cugrade check reference -e {0}   and   cugrade check "
                                         "student_template -e {0}\nthen follow docs/authoring.md, from the contract "
                                         "to the tiers\n",
                                         new_name));
            return to_int(ExitCode::passed);
        }
        if (bench_command->parsed()) {
            for (const auto& text : bench_sizes) {
                bench_options.sizes.push_back(parse_size(text));
            }
            for (const auto& text : bench_shapes) {
                bench_options.shapes.push_back(parse_shape(text));
            }
            for (const auto& text : bench_parameters) {
                const auto [name, value] = parse_parameter(text);
                bench_options.parameters[name] = value;
            }
            bench_options.nvcc = options.nvcc;
            bench_options.cache_dir = options.cache_dir;
            bench_options.cache_max_bytes = options.cache_max_bytes;
            bench_options.table = json_file == "-" ? &std::cerr : &std::cout;
            bench_options.progress = &std::cerr;
            const BenchReport report = bench(full_course(course, "bench"), bench_options);
            if (!report.gpu.available) {
                print(std::cerr, "cugrade: bench needs an NVIDIA GPU: " + report.gpu.unavailable_reason + "\n");
                return to_int(ExitCode::skipped);
            }
            if (!json_file.empty()) {
                write_json_file(json_file, bench_to_json(report), std::cout);
            }
            return to_int(ExitCode::passed);
        }
        const CourseChoice chosen = choose_course(course);
        options.course_origin = chosen.origin;
        options.diagnose = !no_diagnosis;
        options.cpu = cpu ? CpuSelfCheck::always : no_cpu ? CpuSelfCheck::never : CpuSelfCheck::without_gpu;
        const Report report = check(open_course(chosen.root), options);
        ReportOptions report_options;
        report_options.show_hidden = show_hidden;
        report_options.width = terminal_width();
        print_report(json_file == "-" ? std::cerr : std::cout, report, report_options);
        if (!json_file.empty()) {
            write_json_file(json_file, report_to_json(report, report_options), std::cout);
        }
        return to_int(report.exit_code());
    } catch (const UsageError& e) {
        print(std::cerr, fmt::format("cugrade: error: {}\n", e.what()));
        return to_int(ExitCode::invalid);
    } catch (const std::exception& e) {
        print(std::cerr, fmt::format("cugrade: error: {}\n", e.what()));
        return to_int(ExitCode::internal_error);
    }
}
