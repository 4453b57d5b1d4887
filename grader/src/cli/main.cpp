// The cugrade command line: parses options, calls the library, prints, and maps the outcome to an exit code.
#include <CLI/CLI.hpp>
#include <unistd.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

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
    throw UsageError(
        fmt::format("--size takes a number of elements from 1 to {}, such as 16777216, not '{}'", max_elements, text));
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

// One subcommand: its options, bound to values it owns, and what runs it once the command line is parsed.
struct Subcommand {
    CLI::App* command;
    std::function<int()> run;
};

template <class Args>
Subcommand subcommand(CLI::App* command, std::shared_ptr<Args> args, int (*run)(const Args&)) {
    return {command, [args, run] { return run(*args); }};
}

// The nvcc and the build cache a command builds with.
struct BuildSettings {
    std::optional<std::string> nvcc;
    fs::path cache_dir;  // empty: no cache
    std::uint64_t cache_max_bytes = 0;
};

BuildSettings build_settings(const std::string& nvcc, const std::string& cache_dir, bool no_cache = false) {
    BuildSettings settings;
    if (!nvcc.empty()) {
        settings.nvcc = nvcc;
    }
    settings.cache_dir = no_cache ? fs::path{} : cache_dir.empty() ? default_cache_dir() : fs::path(cache_dir);
    settings.cache_max_bytes = default_cache_limit();
    return settings;
}

// cugrade check

struct CheckArgs {
    CheckOptions options;
    std::string submission_dir = ".";
    std::string rubric;
    std::string json_file;
    std::string course;
    std::string cache_dir;
    std::string nvcc;
    bool no_cache = false;
    bool show_hidden = false;
    bool no_diagnosis = false;
    bool cpu = false;
    bool no_cpu = false;
    std::string required_sandbox = "none";
};

int run_check(const CheckArgs& args);

Subcommand add_check(CLI::App& app) {
    auto args = std::make_shared<CheckArgs>();
    CLI::App* command = app.add_subcommand("check", "grade the submission in a folder");
    command->add_option("submission_dir", args->submission_dir, "the folder that holds the submission (default: .)");
    command->add_option("--exercise,-e", args->options.exercises,
                        "grade only this exercise (repeatable; default: every exercise whose file is there)");
    command->add_option("--rubric", args->rubric, "grade with this rubric instead of rubrics/NAME.yaml");
    command->add_option("--json", args->json_file, "also write the results as JSON to this file ('-': stdout)");
    command->add_option("--course", args->course, "the folder with exercises/, reference/ and rubrics/");
    command->add_option("--cache-dir", args->cache_dir, "where builds are cached (default: ~/.cache/cugrade)");
    command->add_flag("--no-cache", args->no_cache, "build from scratch and keep nothing");
    command->add_option("--nvcc", args->nvcc, "the nvcc to build with");
    command->add_flag("--show-hidden", args->show_hidden, "show the names and details of hidden cases (instructors)");
    command->add_flag("--no-diagnosis", args->no_diagnosis,
                      "skip the reruns that diagnose failing cases (compute-sanitizer) and a slow speed test "
                      "(Nsight Compute)");
    auto* cpu_flag = command->add_flag(
        "--cpu", args->cpu,
        "a self-check without an NVIDIA GPU: the correctness cases run on the CPU (the harness and your kernels "
        "compiled with the system's C++ compiler); speed tests are skipped, and it is never a grade. The default where "
        "no NVIDIA GPU is usable");
    command->add_flag("--no-cpu", args->no_cpu, "without an NVIDIA GPU, only build: no CPU self-check")
        ->excludes(cpu_flag);
    command
        ->add_option("--require-sandbox", args->required_sandbox,
                     "grade nothing unless submissions can be contained at least this well: none, files (the host's "
                     "files hidden) or full (also other processes and the network)")
        ->check(CLI::IsMember({"none", "files", "full"}));
    return subcommand(command, args, run_check);
}

CheckOptions check_options(const CheckArgs& args) {
    CheckOptions options = args.options;
    options.submission_dir = args.submission_dir;
    if (!args.rubric.empty()) {
        options.rubric = args.rubric;
    }
    const BuildSettings settings = build_settings(args.nvcc, args.cache_dir, args.no_cache);
    options.nvcc = settings.nvcc;
    options.cache_dir = settings.cache_dir;
    options.cache_max_bytes = settings.cache_max_bytes;
    options.progress = &std::cerr;
    options.required_sandbox = containment_from_string(args.required_sandbox).value_or(Containment::none);
    return options;
}

int run_check(const CheckArgs& args) {
    CheckOptions options = check_options(args);
    const CourseChoice chosen = choose_course(args.course);
    options.course_origin = chosen.origin;
    options.diagnose = !args.no_diagnosis;
    options.cpu = args.cpu ? CpuSelfCheck::always : args.no_cpu ? CpuSelfCheck::never : CpuSelfCheck::without_gpu;
    const Report report = check(open_course(chosen.root), options);
    ReportOptions report_options;
    report_options.show_hidden = args.show_hidden;
    report_options.width = terminal_width();
    print_report(args.json_file == "-" ? std::cerr : std::cout, report, report_options);
    if (!args.json_file.empty()) {
        write_json_file(args.json_file, report_to_json(report, report_options), std::cout);
    }
    return to_int(report.exit_code());
}

// cugrade grade

struct GradeArgs {
    BatchOptions batch;
    std::string submissions;
    std::string results;
    std::string roster;
    std::string required_sandbox = "full";
    std::string status_dir;
    std::string shard;
    SlurmOptions slurm;
    bool use_slurm = false;
    bool no_diagnosis = false;
    std::string course;
    std::string cache_dir;
    std::string nvcc;
};

int run_grade(const GradeArgs& args);

Subcommand add_grade(CLI::App& app) {
    auto args = std::make_shared<GradeArgs>();
    BatchOptions& batch = args->batch;
    SlurmOptions& slurm = args->slurm;
    CLI::App* command = app.add_subcommand("grade", "grade a whole class into a gradebook (docs/batch.md)");
    command->add_option("submissions", args->submissions,
                        "a folder with one folder per student, GitHub Classroom clones, a Gradescope export, or "
                        "a .zip or .tar.gz of one of these");
    command->add_option("-o,--output", args->results, "the results folder (created; a rerun resumes it)");
    command->add_option("--status", args->status_dir,
                        "say how far the batch in this results folder is (done, running, failed, missing)");
    command->add_option("--shard", args->shard,
                        "grade only share I of N of the class (I/N), write no gradebook: a cluster task");
    command->add_flag("--slurm", args->use_slurm, "submit the batch to Slurm as a job array and a merge job");
    command->add_option("--partition", slurm.partition, "with --slurm: the partition");
    command->add_option("--gres", slurm.gres, "with --slurm: the generic resources of each job (default gpu:1)");
    command->add_option("--tasks", slurm.tasks,
                        "with --slurm: tasks of the job array (default: one per 25 "
                        "students, at most 32)");
    command->add_option("--time", slurm.time, "with --slurm: the time limit of each job, as sbatch takes it");
    command->add_option("--account", slurm.account, "with --slurm: the account to charge");
    command->add_option("--sbatch-arg", slurm.sbatch_args, "with --slurm: one more sbatch option (repeatable)");
    command->add_flag("--dry-run", slurm.dry_run, "with --slurm: write and print the job scripts, submit nothing");
    command->add_option(
        "--exercise,-e", batch.exercises,
        "grade only this exercise (repeatable; default: course.yaml's exercises, else those some student handed in)");
    command->add_option("--roster", args->roster, "a CSV of the class: id, name, email, section");
    command->add_flag("--force", batch.force, "grade every student again, even with up-to-date results");
    command->add_flag("--no-diagnosis", args->no_diagnosis,
                      "skip the reruns that diagnose failing cases and slow speed tests");
    command->add_option("--trace", batch.trace,
                        "append a JSON line per harness process to this file: its submission, tool, cases, "
                        "seconds and waits (names hidden cases: for instructors)");
    command->add_option("--only", batch.only, "grade this student again, and no one else (repeatable)");
    command->add_option("--jobs,-j", batch.jobs, "builds at once (default: one per CPU core)");
    command->add_option("--gpus", batch.gpus, "grade on these GPUs, e.g. 0,1 (default: every visible GPU)")
        ->delimiter(',');
    command->add_option("--gpu-jobs", batch.gpu_jobs,
                        "submissions graded at once on each GPU; their speed tests still take turns (default: "
                        "from the CPU cores and the GPU's memory, at most 8)");
    command->add_option("--canvas-assignment", batch.canvas_assignment,
                        "the assignment column of gradebook-canvas.csv (default: cugrade)");
    command->add_option("--course", args->course, "the folder with exercises/, reference/ and rubrics/");
    command->add_option("--cache-dir", args->cache_dir, "where builds are cached (default: ~/.cache/cugrade)");
    command->add_option("--nvcc", args->nvcc, "the nvcc to build with");
    command
        ->add_option("--require-sandbox", args->required_sandbox,
                     "grade nothing unless submissions can be contained at least this well (default: full)")
        ->check(CLI::IsMember({"none", "files", "full"}));
    return subcommand(command, args, run_grade);
}

int print_batch_status(const std::string& status_dir) {
    const BatchStatus status = batch_status(status_dir);
    print(std::cout, fmt::format("{} students: {} done, {} build_failed, {} error, {} running, {} missing\n",
                                 status.total(), status.done.size(), status.build_failed.size(), status.error.size(),
                                 status.running.size(), status.missing.size()));
    for (const auto& [label, ids] :
         {std::pair{"running", &status.running}, std::pair{"build_failed", &status.build_failed},
          std::pair{"error", &status.error}, std::pair{"missing", &status.missing}}) {
        if (!ids->empty()) {
            print(std::cout, fmt::format("{}: {}\n", label, fmt::join(*ids, ", ")));
        }
    }
    return to_int(status.missing.empty() && status.running.empty() ? ExitCode::passed : ExitCode::failed);
}

BatchOptions batch_options(const GradeArgs& args, const BuildSettings& settings) {
    if (args.submissions.empty() || args.results.empty()) {
        throw UsageError("grade needs the submissions and -o RESULTS (or --status RESULTS)");
    }
    BatchOptions batch = args.batch;
    if (!args.shard.empty()) {
        batch.shard = parse_shard(args.shard);
    }
    batch.submissions = args.submissions;
    batch.results = args.results;
    if (!args.roster.empty()) {
        batch.roster = args.roster;
    }
    batch.required_sandbox = containment_from_string(args.required_sandbox).value_or(Containment::full);
    batch.nvcc = settings.nvcc;
    batch.cache_dir = settings.cache_dir;
    batch.cache_max_bytes = settings.cache_max_bytes;
    batch.log = &std::cerr;
    batch.live = ::isatty(STDERR_FILENO) != 0;
    return batch;
}

int submit_batch(const Course& course, const BatchOptions& batch, const SlurmOptions& slurm) {
    const SlurmSubmission submitted = submit_to_slurm(course, batch, slurm);
    for (const auto& warning : submitted.warnings) {
        std::cerr << "cugrade: warning: " << warning << "\n";
    }
    if (slurm.dry_run) {
        print(std::cout,
              fmt::format("# {}\n{}\n# {}\n{}", submitted.array_script.string(), read_file(submitted.array_script),
                          submitted.merge_script.string(), read_file(submitted.merge_script)));
        return to_int(ExitCode::passed);
    }
    print(
        std::cout,
        fmt::format("submitted {} students in {} tasks: job array {}, merge job {} (runs when every task has ended)\n"
                    "follow them: squeue -j {},{}   or   cugrade grade --status {}\n"
                    "task logs: {}\n",
                    submitted.students, submitted.tasks, submitted.array_job, submitted.merge_job, submitted.array_job,
                    submitted.merge_job, batch.results.string(), (batch.results / "slurm" / "logs").string()));
    return to_int(ExitCode::passed);
}

int grade_on_this_machine(const GradeArgs& args, BatchOptions batch) {
    const CourseChoice chosen = choose_course(args.course);
    batch.course_origin = chosen.origin;
    batch.diagnose = !args.no_diagnosis;
    const BatchSummary summary = grade_class(full_course(chosen.root.string(), "grade"), batch);
    for (const auto& warning : summary.warnings) {
        print(std::cerr, "cugrade: warning: " + warning + "\n");
    }
    if (batch.shard) {
        print(std::cout, fmt::format("shard {}/{}: {} students graded now, {} by another batch\n", batch.shard->index,
                                     batch.shard->count, summary.graded, summary.elsewhere));
        return to_int(summary.gpu.available ? ExitCode::passed : ExitCode::skipped);
    }
    print(std::cout, fmt::format("{} students ({} graded now, {} up to date, {} missing, {} failed) on GPU {}\n"
                                 "exercises: {}\ngradebook: {}\n",
                                 summary.students, summary.graded, summary.reused, summary.missing, summary.failed,
                                 summary.gpu.available ? summary.gpu.name : "none: " + summary.gpu.unavailable_reason,
                                 summary.exercises, summary.gradebook.string()));
    return to_int(summary.gpu.available ? ExitCode::passed : ExitCode::skipped);
}

int run_grade(const GradeArgs& args) {
    const BuildSettings settings = build_settings(args.nvcc, args.cache_dir);
    if (!args.status_dir.empty()) {
        return print_batch_status(args.status_dir);
    }
    const BatchOptions batch = batch_options(args, settings);
    if (args.use_slurm) {
        return submit_batch(full_course(args.course, "grade"), batch, args.slurm);
    }
    return grade_on_this_machine(args, batch);
}

// cugrade bench

struct BenchArgs {
    BenchOptions options;
    std::vector<std::string> sizes;
    std::vector<std::string> shapes;
    std::vector<std::string> parameters;
    std::string json_file;
    std::string course;
    std::string cache_dir;
    std::string nvcc;
};

int run_bench(const BenchArgs& args);

Subcommand add_bench(CLI::App& app) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* command = app.add_subcommand(
        "bench", "time each exercise's reference against its library baselines and the copy bandwidth");
    command->add_option("--exercise,-e", args->options.exercises, "only this exercise (repeatable)");
    command->add_option("--size", args->sizes, "element count for vector exercises (repeatable)");
    command->add_option("--shape", args->shapes, "ROWSxCOLS for matrix exercises (repeatable)");
    command->add_option("--parameter", args->parameters,
                        "NAME=VALUE: a parameter of the speed test, for the exercises that have it (matmul's "
                        "inner size: k=1024; repeatable)");
    command->add_option("--json", args->json_file, "also write the figures as JSON to this file ('-': stdout)");
    command->add_option("--course", args->course, "the folder with exercises/, reference/ and rubrics/");
    command->add_option("--cache-dir", args->cache_dir, "where builds are cached (default: ~/.cache/cugrade)");
    command->add_option("--nvcc", args->nvcc, "the nvcc to build with");
    return subcommand(command, args, run_bench);
}

BenchOptions bench_options(const BenchArgs& args, const BuildSettings& settings) {
    BenchOptions options = args.options;
    for (const auto& text : args.sizes) {
        options.sizes.push_back(parse_size(text));
    }
    for (const auto& text : args.shapes) {
        options.shapes.push_back(parse_shape(text));
    }
    for (const auto& text : args.parameters) {
        const auto [name, value] = parse_parameter(text);
        options.parameters[name] = value;
    }
    options.nvcc = settings.nvcc;
    options.cache_dir = settings.cache_dir;
    options.cache_max_bytes = settings.cache_max_bytes;
    options.table = args.json_file == "-" ? &std::cerr : &std::cout;
    options.progress = &std::cerr;
    return options;
}

int run_bench(const BenchArgs& args) {
    const BenchOptions options = bench_options(args, build_settings(args.nvcc, args.cache_dir));
    const BenchReport report = bench(full_course(args.course, "bench"), options);
    if (!report.gpu.available) {
        print(std::cerr, "cugrade: bench needs an NVIDIA GPU: " + report.gpu.unavailable_reason + "\n");
        return to_int(ExitCode::skipped);
    }
    if (!args.json_file.empty()) {
        write_json_file(args.json_file, bench_to_json(report), std::cout);
    }
    return to_int(ExitCode::passed);
}

// cugrade handout

struct HandoutArgs {
    HandoutOptions options;
    std::string output;
    std::string course;
    std::string nvcc;
};

int run_handout(const HandoutArgs& args);

Subcommand add_handout(CLI::App& app) {
    auto args = std::make_shared<HandoutArgs>();
    CLI::App* command = app.add_subcommand(
        "handout", "write the student kit: the course without its references or hidden cases (docs/handout.md)");
    command
        ->add_option("output", args->output,
                     "the kit's folder, new or a kit made before; OUTPUT.tar.gz "
                     "is written beside it")
        ->required();
    command->add_option("--exercise,-e", args->options.exercises, "only this exercise (repeatable; default: all)");
    command
        ->add_option("--arch", args->options.arches,
                     "SASS for this architecture, e.g. sm_90 (repeatable; default: every one from sm_75 that nvcc "
                     "builds)")
        ->delimiter(',');
    command->add_option("--course", args->course, "the folder with exercises/, reference/ and rubrics/");
    command->add_option("--nvcc", args->nvcc, "the nvcc to build with");
    return subcommand(command, args, run_handout);
}

void print_handout(const Handout& handout) {
    print(std::cout,
          fmt::format("kit: {}\n     {}\nexercises: {}\nbuilt with CUDA {} for {}, and PTX of {} "
                      "for newer GPUs\n{}\n",
                      handout.folder.string(), handout.tarball.string(), fmt::join(handout.kit.exercises, ", "),
                      handout.kit.release, fmt::join(handout.kit.arches, " "), handout.kit.arches.back(),
                      handout.kit.cpu_target.empty() ? "no CPU self-check (see above why)"
                                                     : "CPU self-check without a GPU on " + handout.kit.cpu_target));
}

int run_handout(const HandoutArgs& args) {
    const Toolchain toolchain = find_toolchain(build_settings(args.nvcc, "").nvcc);
    const CourseChoice chosen = choose_course(args.course);
    print(std::cerr, fmt::format("cugrade: course: {} ({})\n", chosen.root.string(), chosen.origin));
    HandoutOptions options = args.options;
    options.output = args.output;
    options.progress = [](const std::string& line) { print(std::cerr, "cugrade: " + line + "\n"); };
    print_handout(make_handout(open_course(chosen.root), toolchain, options));
    return to_int(ExitCode::passed);
}

// cugrade new

struct NewArgs {
    std::string name;
    std::string title;
    std::string course;
    std::string nvcc;
};

int run_new(const NewArgs& args);

Subcommand add_new(CLI::App& app) {
    auto args = std::make_shared<NewArgs>();
    CLI::App* command = app.add_subcommand(
        "new", "add an exercise to the course that builds and grades at once, to make your own (docs/authoring.md)");
    command->add_option("name", args->name, "the exercise's name: its file, header and entry point")->required();
    command->add_option("--title", args->title, "its title (default: from the name)");
    command->add_option("--course", args->course, "the folder with exercises/, reference/ and rubrics/");
    command->add_option("--nvcc", args->nvcc, "the nvcc that checks the name against the C, C++ and CUDA headers");
    return subcommand(command, args, run_new);
}

int run_new(const NewArgs& args) {
    const std::optional<std::string> nvcc = build_settings(args.nvcc, "").nvcc;
    const Course target = full_course(args.course, "new");
    const auto written = new_exercise(target.root, args.name,
                                      args.title.empty() ? default_title(args.name) : args.title, find_toolchain(nvcc));
    print(std::cout, fmt::format("exercise {} in {}:\n", args.name, target.root.string()));
    for (const auto& path : written) {
        print(std::cout, "  " + path.string() + "\n");
    }
    print(std::cout, fmt::format("try it: cugrade check reference -e {0}   and   cugrade check "
                                 "student_template -e {0}\nthen follow docs/authoring.md, from the contract "
                                 "to the tiers\n",
                                 args.name));
    return to_int(ExitCode::passed);
}

// The exit code of a command line that does not parse, or of --help and --version; nothing when it parses.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {
            return app.exit(e);  // --help, --version
        }
        print(std::cerr, fmt::format("cugrade: error: {}\n(run '{}' for the options)\n", e.what(), help_command(app)));
        return to_int(ExitCode::invalid);
    }
    return std::nullopt;
}

// The one subcommand a parsed command line names (require_subcommand(1)).
const Subcommand& named_subcommand(const std::vector<Subcommand>& subcommands) {
    const auto named = std::find_if(subcommands.begin(), subcommands.end(),
                                    [](const Subcommand& subcommand) { return subcommand.command->parsed(); });
    return named != subcommands.end() ? *named : subcommands.front();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"cugrade: builds, checks and times CUDA kernel exercises against their rubrics", "cugrade"};
    app.set_version_flag("--version", std::string("cugrade ") + CUGRADE_VERSION);
    app.require_subcommand(1);
    const std::vector<Subcommand> subcommands = {add_check(app), add_grade(app), add_bench(app), add_handout(app),
                                                 add_new(app)};
    if (const std::optional<int> refused = parse_command_line(app, argc, argv)) {
        return *refused;
    }
    try {
        kill_children_on_interrupt();
        return named_subcommand(subcommands).run();
    } catch (const UsageError& e) {
        print(std::cerr, fmt::format("cugrade: error: {}\n", e.what()));
        return to_int(ExitCode::invalid);
    } catch (const std::exception& e) {
        print(std::cerr, fmt::format("cugrade: error: {}\n", e.what()));
        return to_int(ExitCode::internal_error);
    }
}
