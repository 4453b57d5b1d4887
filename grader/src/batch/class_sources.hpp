// Every student's graded files of a class, read once, and the similarity folders made from them (one folder per
// exercise, a file per student, for MOSS, JPlag or Dolos).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "batch/class_layout.hpp"
#include "batch/class_plans.hpp"

namespace cugrade {

// Every student's graded files, read once for the similarity folders and the class report: id -> exercise -> bytes.
using ClassSources = std::map<std::string, std::map<std::string, std::string>>;

// The graded files of every student of `layout` that hands them in, as read for grading (a file refused is left out).
ClassSources read_class_sources(const std::vector<ExercisePlan>& plans, const ClassLayout& layout);

// RESULTS/similarity/EXERCISE/ID.cu: every graded file, named by its student, for MOSS, JPlag or Dolos.
void write_similarity_folders(const std::vector<ExercisePlan>& plans, const ClassSources& sources,
                              const std::filesystem::path& root);

}  // namespace cugrade
