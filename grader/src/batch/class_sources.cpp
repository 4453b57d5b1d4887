#include "batch/class_sources.hpp"

#include "course/submission.hpp"
#include "base/file_io.hpp"

namespace cugrade {
namespace fs = std::filesystem;

ClassSources read_class_sources(const std::vector<ExercisePlan>& plans, const ClassLayout& layout) {
    ClassSources sources;
    for (const auto& student : layout.students) {
        for (std::size_t e = 0; e < plans.size(); ++e) {
            if (!student.files[e].present) {
                continue;
            }
            SubmissionFile file = read_submission(student.folder, plans[e].exercise.submission_file);
            if (!file.refused) {
                sources[student.id][plans[e].exercise.name] = std::move(file.bytes);
            }
        }
    }
    return sources;
}

void write_similarity_folders(const std::vector<ExercisePlan>& plans, const ClassSources& sources,
                              const fs::path& root) {
    std::error_code ec;
    fs::remove_all(root, ec);
    for (const auto& plan : plans) {
        const fs::path folder = root / plan.exercise.name;
        fs::create_directories(folder);
        const std::string extension = fs::path(plan.exercise.submission_file).extension().string();
        for (const auto& [id, files] : sources) {
            if (const auto file = files.find(plan.exercise.name); file != files.end()) {
                write_file(folder / (id + extension), file->second);
            }
        }
    }
}

}  // namespace cugrade
