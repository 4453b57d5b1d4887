#include "authoring/handout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>
#include <utility>

#include "batch/archive.hpp"
#include "base/config.hpp"
#include "course/course_file.hpp"
#include "build/course_tools.hpp"
#include "cpu/cpu_build.hpp"
#include "base/error.hpp"
#include "base/gpu.hpp"
#include "base/file_io.hpp"
#include "build/harness_object.hpp"
#include "base/machine_lock.hpp"
#include "authoring/opaque_names.hpp"
#include "base/staging.hpp"
#include "course/visible_rubric.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

int arch_number(const std::string& arch) { return std::stoi(arch.substr(3)); }

// sm_75 before sm_100: by number, not by text.
void sort_by_number(std::vector<std::string>& arches) {
    std::sort(arches.begin(), arches.end(),
              [](const std::string& a, const std::string& b) { return arch_number(a) < arch_number(b); });
}

// Every name the reference may use without declaring it: what its #include lines bring in (declarations and
// macros, as nvcc preprocesses them), the contract's, and the entry points.
std::set<std::string> names_declared_elsewhere(const Exercise& exercise, const Toolchain& toolchain,
                                               const std::string& reference, const fs::path& work) {
    std::string includes;
    std::istringstream lines(reference);
    for (std::string line; std::getline(lines, line);) {
        const auto first = line.find_first_not_of(" \t");
        if (first != std::string::npos && line.compare(first, 1, "#") == 0 &&
            line.find("include") != std::string::npos) {
            includes += line + "\n";
        }
    }
    write_file(work / "includes.cu", includes);
    auto preprocess = course_compile_command(exercise, toolchain, {});
    preprocess.insert(preprocess.end(), {"-E", "-x", "cu", "includes.cu"});
    std::set<std::string> known =
        identifiers_in(tool_output(preprocess, work, "preprocessing the reference's headers failed:"));
    preprocess.insert(preprocess.end(), {"-Xcompiler", "-dM"});
    for (const auto& name : identifiers_in(tool_output(preprocess, work, "listing the headers' macros failed:"))) {
        known.insert(name);
    }
    for (const auto& name : identifiers_in(read_file(exercise.contract_header))) {
        known.insert(name);
    }
    known.insert(exercise.entry_points.begin(), exercise.entry_points.end());
    return known;
}

std::vector<std::string> arch_flags(const std::vector<std::string>& arches) {
    std::vector<std::string> flags = {"--threads", "0"};
    for (const auto& arch : arches) {
        flags.push_back(fmt::format("-gencode=arch=compute_{0},code=sm_{0}", arch_number(arch)));
    }
    // PTX of the newest, which the driver compiles for GPUs newer than the toolkit.
    flags.push_back(fmt::format("-gencode=arch=compute_{0},code=compute_{0}", arch_number(arches.back())));
    return flags;
}

void copy_file_into(const fs::path& from, const fs::path& to) {
    fs::create_directories(to.parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

void copy_folder_into(const fs::path& from, const fs::path& to) {
    for (const auto& file : regular_files_under(from)) {
        copy_file_into(file, to / file.lexically_relative(from));
    }
}

std::vector<std::string> chosen_arches(const Toolchain& toolchain, const std::vector<std::string>& asked) {
    const auto supported = kit_architectures(toolchain);
    if (asked.empty()) {
        return supported;
    }
    std::vector<std::string> arches;
    for (const auto& arch : asked) {
        if (std::find(supported.begin(), supported.end(), arch) == supported.end()) {
            throw UsageError(fmt::format("nvcc {} cannot build {} for a kit (it builds {})",
                                         toolchain.release.empty() ? toolchain.nvcc_version : toolchain.release, arch,
                                         fmt::join(supported, ", ")));
        }
        if (std::find(arches.begin(), arches.end(), arch) == arches.end()) {
            arches.push_back(arch);
        }
    }
    sort_by_number(arches);
    return arches;
}

void check_output_folder(const Course& course, const fs::path& output) {
    for (const char* part : {"exercises", "rubrics", "reference", "student_template", "grader", "scripts"}) {
        if (lies_under(output, (course.root / part).lexically_normal())) {
            throw UsageError(fmt::format("the kit cannot be written to '{}', inside the course's {}/: give a folder "
                                         "outside it",
                                         output.string(), part));
        }
    }
    std::error_code ec;
    if (!fs::exists(output, ec)) {
        return;
    }
    if (!fs::is_directory(output, ec) || (!fs::is_empty(output, ec) && !fs::exists(output / kit_manifest_name, ec))) {
        throw UsageError(fmt::format("'{}' exists and is not a cugrade kit: give a new folder, or remove it first",
                                     output.string()));
    }
}

// Where a kit's harnesses are compiled: always the same folder, since nvcc derives names in the object from the
// source's path, and the course's own path would tell a student where the instructor keeps it. One handout at a time
// uses it (a lock), holding a copy of what the harness compiles from.
class KitWorkshop {
public:
    KitWorkshop() : root_(created(fs::temp_directory_path() / "cugrade-kit-build")), lock_(root_ / ".lock") {}
    ~KitWorkshop() { clear(); }
    KitWorkshop(const KitWorkshop&) = delete;
    KitWorkshop& operator=(const KitWorkshop&) = delete;

    // exercises/NAME of the kit: its description, contract, README and the prebuilt harness.
    // With `for_cpu`, also its objects for the CPU self-check (exercises/NAME/cpu), from the same reference.
    void write_exercise(const Course& course, const Exercise& exercise, const Toolchain& toolchain,
                        const std::vector<std::string>& arches, bool for_cpu, const fs::path& kit) {
        clear();
        const Course copy{root_, std::nullopt};
        copy_folder_into(course.common_dir(), copy.common_dir());
        for (const auto& file :
             {exercise.directory / "exercise.yaml", exercise.contract_header, exercise.harness_source}) {
            copy_file_into(file, copy.exercises_dir() / exercise.name / file.filename());
        }
        // exercise.yaml's readme_sections name sections of the README, which loading the exercise checks.
        if (std::error_code ec; fs::is_regular_file(exercise.directory / "README.md", ec)) {
            copy_file_into(exercise.directory / "README.md", copy.exercises_dir() / exercise.name / "README.md");
        }
        const std::string reference = read_file(exercise.reference_source);
        const OpaqueSource opaque =
            with_opaque_names(reference, names_declared_elsewhere(exercise, toolchain, reference, root_));
        fs::create_directories(root_ / "reference");
        write_file(root_ / "reference" / exercise.submission_file, opaque.text);

        const Exercise staged = load_exercise(copy, exercise.name);
        const fs::path build = root_ / "build";
        fs::create_directories(build);
        // Temporary files named after the output, not nvcc's process: the same sources give the same object.
        auto flags = arch_flags(arches);
        flags.push_back("--objdir-as-tempdir");
        // Uncompressed device code: what a kit holds is there for anyone to read, the leak scan (strings) included.
        flags.push_back("--no-compress");
        compile_harness_object(staged, toolchain, {flags, staged.reference_source, false}, build);

        const fs::path folder = kit / "exercises" / exercise.name;
        copy_file_into(build / "harness.o", folder / "harness.o");
        if (for_cpu) {
            build_cpu_kit_objects(staged, root_, build / "cpu");
            copy_folder_into(build / "cpu", folder / "cpu");
        }
        for (const auto& file :
             {exercise.directory / "exercise.yaml", exercise.contract_header, exercise.directory / "README.md"}) {
            std::error_code ec;
            if (fs::is_regular_file(file, ec)) {
                copy_file_into(file, folder / file.filename());
            }
        }
    }

private:
    void clear() {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(root_, ec)) {
            if (entry.path().filename() != ".lock") {
                fs::remove_all(entry.path(), ec);
            }
        }
    }

    static fs::path created(const fs::path& folder) {
        fs::create_directories(folder);
        return folder;
    }

    fs::path root_;
    MachineLock lock_;
};

void check_full_course(const Course& course) {
    if (course.kit) {
        throw UsageError(fmt::format("'{}' is a student kit: a kit is made from the full course, with its references",
                                     course.root.string()));
    }
    for (const char* needed : {"CMakeLists.txt", "grader", "scripts/setup.sh", "handout/README.md"}) {
        std::error_code ec;
        if (!fs::exists(course.root / needed, ec)) {
            throw UsageError(fmt::format("the course '{}' has no '{}': a kit carries cugrade's sources, so make it "
                                         "from a cugrade checkout that holds the course",
                                         course.root.string(), needed));
        }
    }
}

std::vector<Exercise> load_exercises(const Course& course, const std::vector<std::string>& asked) {
    const auto names = asked.empty() ? course.exercise_names() : asked;
    std::vector<Exercise> exercises;
    for (const auto& name : names) {
        exercises.push_back(load_exercise(course, name));  // says which file is missing, the reference among them
    }
    return exercises;
}

// The kit's toolchain and architectures, before any exercise is in it.
Kit kit_for(const Course& course, const Toolchain& toolchain, const std::vector<std::string>& arches) {
    Kit kit;
    kit.cugrade_version = CUGRADE_VERSION;
    kit.nvcc_version = toolchain.nvcc_version;
    kit.release = toolchain.release;
    kit.arches = arches;
    // A student's machine without a GPU compiles for the GPUs the course grades on, whose machine code the checks
    // read (a submission's object links with the harness's, whatever their architectures).
    kit.graded_arch = load_course_file(course.root / "course.yaml", course.exercise_names()).arch;
    if (kit.graded_arch.empty()) {
        kit.graded_arch = fallback_arch;
    }
    return kit;
}

// The CPU self-check's objects are for machines like this one (students' laptops on Linux, mostly); empty: none.
std::string kit_cpu_target(const HandoutOptions& options) {
    const std::optional<std::string> no_cpu = cpu_self_check_missing();
    const std::string target = no_cpu ? "" : cpu_target();
    if (no_cpu && options.progress) {
        options.progress(fmt::format("the kit will have no CPU self-check: {}", *no_cpu));
    }
    return target;
}

// What builds and runs cugrade, without its tests or its documentation for instructors.
void copy_cugrade_sources(const Course& course, const fs::path& staging) {
    for (const char* file : {"CMakeLists.txt", "CMakePresets.json", "scripts/setup.sh"}) {
        copy_file_into(course.root / file, staging / file);
    }
    copy_folder_into(course.root / "grader", staging / "grader");
    copy_folder_into(course.common_dir(), staging / "exercises" / "common");
    copy_file_into(course.root / "handout" / "README.md", staging / "README.md");
}

// exercises/NAME, rubrics/NAME.yaml and the student template of one exercise, into the kit staged at `staging`.
void stage_exercise(const Course& course, const Exercise& exercise, const Toolchain& toolchain, const Kit& kit,
                    const HandoutOptions& options, KitWorkshop& workshop, const fs::path& staging) {
    if (options.progress) {
        options.progress(
            fmt::format("building the {} harness and reference: SASS for {}, PTX of {} for "
                        "newer GPUs{}",
                        exercise.name, fmt::join(kit.arches, " "), kit.arches.back(),
                        kit.cpu_target.empty() ? "" : ", and for the CPU self-check on " + kit.cpu_target));
    }
    workshop.write_exercise(course, exercise, toolchain, kit.arches, !kit.cpu_target.empty(), staging);
    fs::create_directories(staging / "rubrics");
    write_file(staging / "rubrics" / (exercise.name + ".yaml"), visible_rubric_text(course.rubric_for(exercise.name)));
    const fs::path template_file = course.root / "student_template" / exercise.submission_file;
    std::error_code ec;
    if (fs::is_regular_file(template_file, ec)) {
        copy_file_into(template_file, staging / "student_template" / exercise.submission_file);
    }
}

// The digest of every file grading reads from the kit staged at `staging`.
std::map<std::string, std::string> graded_file_digests(const fs::path& staging) {
    std::map<std::string, std::string> files;
    for (const char* graded : {"exercises", "rubrics"}) {
        for (const auto& file : regular_files_under(staging / graded)) {
            files[file.lexically_relative(staging).string()] = file_digest(file);
        }
    }
    return files;
}

// The whole kit, staged beside `output` and then put in its place; returns `kit` with its exercises and files.
Kit write_kit_folder(const Course& course, const std::vector<Exercise>& exercises, const Toolchain& toolchain,
                     const HandoutOptions& options, KitWorkshop& workshop, Kit kit, const fs::path& output) {
    const fs::path staging = output.parent_path() / staging_name("kit");
    try {
        fs::create_directories(staging);
        copy_cugrade_sources(course, staging);
        for (const Exercise& exercise : exercises) {
            stage_exercise(course, exercise, toolchain, kit, options, workshop, staging);
            kit.exercises.push_back(exercise.name);
        }
        kit.files = graded_file_digests(staging);
        write_kit(staging, kit);
        fs::remove_all(output);
        fs::rename(staging, output);
    } catch (...) {
        std::error_code ec;
        fs::remove_all(staging, ec);
        throw;
    }
    return kit;
}

void pack_kit(const fs::path& output, const fs::path& tarball) {
    const fs::path tarball_staging = output.parent_path() / staging_name("kit.tar.gz");
    try {
        pack_folder(output, tarball_staging);
        fs::rename(tarball_staging, tarball);
    } catch (...) {
        std::error_code ec;
        fs::remove(tarball_staging, ec);
        throw;
    }
}

}  // namespace

std::vector<std::string> kit_architectures(const Toolchain& toolchain) {
    static const std::regex sass(R"(^sm_(\d+)$)");
    std::vector<std::string> arches;
    std::istringstream codes(
        tool_output({toolchain.nvcc, "--list-gpu-code"}, fs::temp_directory_path(), "nvcc --list-gpu-code failed:"));
    for (std::string code; codes >> code;) {
        if (std::smatch m; std::regex_match(code, m, sass) && std::stoi(m[1].str()) >= 75) {
            arches.push_back(code);
        }
    }
    sort_by_number(arches);
    return arches;
}

Handout make_handout(const Course& course, const Toolchain& toolchain, const HandoutOptions& options) {
    check_full_course(course);
    const fs::path output = fs::absolute(options.output).lexically_normal();
    check_output_folder(course, output);
    const std::vector<Exercise> exercises = load_exercises(course, options.exercises);
    const auto arches = chosen_arches(toolchain, options.arches);
    if (arches.empty()) {
        throw UsageError(fmt::format("nvcc ({}) builds no architecture from sm_75 on", toolchain.nvcc_version));
    }

    Handout handout;
    handout.folder = output;
    handout.tarball = output.string() + ".tar.gz";
    Kit kit = kit_for(course, toolchain, arches);
    kit.cpu_target = kit_cpu_target(options);

    fs::create_directories(output.parent_path());
    KitWorkshop workshop;
    handout.kit = write_kit_folder(course, exercises, toolchain, options, workshop, std::move(kit), output);
    pack_kit(output, handout.tarball);
    return handout;
}

}  // namespace cugrade
