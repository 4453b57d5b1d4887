// A class's grading in submissions: each file a student handed in is a task of its own, taken by whichever worker is
// free, so that one student's exercises are graded side by side and the class ends with its last submission, not
// with its last student's files one after the other. A student's results are whole only with every file graded:
// the queue says which task ends its student.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace cugrade {

class SubmissionQueue {
public:
    // `files[s]`: the exercises (indices into the batch's plans) of the s-th student to grade that have a file; a
    // student with none is one task with no exercise (a row of notes). Tasks are handed out student by student.
    explicit SubmissionQueue(const std::vector<std::vector<std::size_t>>& files);

    struct Task {
        std::size_t student = 0;
        std::optional<std::size_t> exercise;
    };
    // The next task, or none when every task has been handed out.
    std::optional<Task> next();

    // Whether the student is this batch's to grade: `claim` runs once, for the first of the student's tasks to ask;
    // the others wait for its answer. A student not claimed has its tasks skipped.
    bool claimed(std::size_t student, const std::function<bool()>& claim);

    // A task of the student is done; true for the last of its tasks, whose worker then writes the student's results
    // (what the others recorded is theirs to read then).
    bool finish(std::size_t student);

private:
    enum class Claim { not_asked, asking, yes, no };
    struct Student {
        std::size_t tasks_left = 0;
        Claim claim = Claim::not_asked;
    };
    std::mutex mutex_;
    std::condition_variable claim_answered_;
    std::vector<Task> tasks_;
    std::size_t next_ = 0;
    std::vector<Student> students_;
};

}  // namespace cugrade
