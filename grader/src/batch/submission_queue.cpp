#include "batch/submission_queue.hpp"

#include <exception>

namespace cugrade {

SubmissionQueue::SubmissionQueue(const std::vector<std::vector<std::size_t>>& files) : students_(files.size()) {
    for (std::size_t s = 0; s < files.size(); ++s) {
        if (files[s].empty()) {
            tasks_.push_back({s, std::nullopt});
        }
        for (const std::size_t exercise : files[s]) {
            tasks_.push_back({s, exercise});
        }
        students_[s].tasks_left = files[s].empty() ? 1 : files[s].size();
    }
}

std::optional<SubmissionQueue::Task> SubmissionQueue::next() {
    std::lock_guard lock(mutex_);
    if (next_ >= tasks_.size()) {
        return std::nullopt;
    }
    return tasks_[next_++];
}

bool SubmissionQueue::claimed(std::size_t student, const std::function<bool()>& claim) {
    std::unique_lock lock(mutex_);
    Student& s = students_.at(student);
    if (s.claim == Claim::not_asked) {
        s.claim = Claim::asking;
        lock.unlock();
        bool yes = false;
        std::exception_ptr failed;  // the others still get an answer: no
        try {
            yes = claim();
        } catch (...) {
            failed = std::current_exception();
        }
        lock.lock();
        s.claim = yes ? Claim::yes : Claim::no;
        claim_answered_.notify_all();
        if (failed) {
            std::rethrow_exception(failed);
        }
        return yes;
    }
    claim_answered_.wait(lock, [&] { return s.claim == Claim::yes || s.claim == Claim::no; });
    return s.claim == Claim::yes;
}

bool SubmissionQueue::finish(std::size_t student) {
    std::lock_guard lock(mutex_);
    Student& s = students_.at(student);
    return s.tasks_left > 0 && --s.tasks_left == 0;
}

}  // namespace cugrade
