// Reading a student's file: links out of the folder, things that are not files, and files too large are refused
// with the reason, never followed or read.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "fresh_folder.hpp"
#include "course/submission.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

fs::path fresh(const std::string& name) { return fresh_folder("submission", name); }

}  // namespace

TEST_CASE("a regular file is read whole") {
    const fs::path dir = fresh("regular");
    std::ofstream(dir / "sum.cu") << "void sum() {}\n";
    const SubmissionFile file = read_submission(dir, "sum.cu");
    CHECK_FALSE(file.refused);
    CHECK(file.bytes == "void sum() {}\n");
    CHECK(file.shown == dir / "sum.cu");
}

TEST_CASE("a link out of the submission folder is refused, whatever it points at") {
    const fs::path root = fresh("links");
    fs::create_directories(root / "student");
    std::ofstream(root / "reference.cu") << "the reference\n";
    fs::create_symlink("../reference.cu", root / "student" / "sum.cu");
    SubmissionFile file = read_submission(root / "student", "sum.cu");
    REQUIRE(file.refused);
    CHECK(*file.refused == "sum.cu is a symbolic link to '../reference.cu', outside the submission folder: cugrade "
                           "reads only files inside it; submit the file itself");
    CHECK(file.bytes.empty());

    fs::remove(root / "student" / "sum.cu");
    fs::create_symlink("/etc/passwd", root / "student" / "sum.cu");
    file = read_submission(root / "student", "sum.cu");
    REQUIRE(file.refused);
    CHECK(file.bytes.empty());

    fs::remove(root / "student" / "sum.cu");
    fs::create_symlink("missing.cu", root / "student" / "sum.cu");
    file = read_submission(root / "student", "sum.cu");
    REQUIRE(file.refused);
    CHECK(*file.refused == "sum.cu is a symbolic link to 'missing.cu', which does not exist: submit the file itself");
}

TEST_CASE("a link inside the submission folder is followed") {
    const fs::path dir = fresh("inside");
    fs::create_directories(dir / "src");
    std::ofstream(dir / "src" / "mine.cu") << "mine\n";
    fs::create_symlink("src/mine.cu", dir / "sum.cu");
    const SubmissionFile file = read_submission(dir, "sum.cu");
    CHECK_FALSE(file.refused);
    CHECK(file.bytes == "mine\n");
}

TEST_CASE("a folder, a named pipe or a file too large is refused without blocking") {
    const fs::path dir = fresh("special");
    fs::create_directories(dir / "sum.cu");
    CHECK(*read_submission(dir, "sum.cu").refused == "sum.cu is a folder, not a file of source code");
    fs::remove(dir / "sum.cu");
    REQUIRE(::mkfifo((dir / "sum.cu").c_str(), 0600) == 0);
    CHECK(submission_present(dir, "sum.cu"));
    CHECK(*read_submission(dir, "sum.cu").refused == "sum.cu is a named pipe, not a file of source code");
    fs::remove(dir / "sum.cu");
    {
        std::ofstream big(dir / "sum.cu");
        big << std::string(max_submission_bytes + 1, 'x');
    }
    CHECK(*read_submission(dir, "sum.cu").refused == "sum.cu is 1048577 bytes; a submission file may have at most "
                                                     "1048576 bytes");
    CHECK_FALSE(submission_present(dir, "minmax.cu"));
}
