// The files `cugrade new` writes for an exercise, before its name is put in.
#pragma once

#include <string>
#include <vector>

namespace cugrade {

struct SkeletonFile {
    std::string path;  // relative to the course's root; @name@ stands for the exercise's name
    std::string text;  // @name@, @NAME@ and @Title@ stand for the name, the name in capitals and the title
};

std::vector<SkeletonFile> exercise_skeleton();

}  // namespace cugrade
