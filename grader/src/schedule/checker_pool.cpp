#include "schedule/checker_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace cugrade {
namespace fs = std::filesystem;

CheckerPool::CheckerPool(std::shared_ptr<GpuGate> gate, std::size_t idle_limit, int job_limit)
    : gate_(std::move(gate)), idle_limit_(idle_limit), job_limit_(job_limit) {}

CheckerPool::~CheckerPool() {
    std::deque<std::unique_ptr<KeptChecker>> idle;
    {
        std::lock_guard lock(mutex_);
        idle.swap(idle_);
    }
    for (auto& checker : idle) {
        try {
            end(std::move(checker));
        } catch (const std::exception&) {
            // Its process group is killed by its ChildProcess anyway.
        }
    }
}

std::unique_ptr<KeptChecker> CheckerPool::take(const std::string& key) {
    std::lock_guard lock(mutex_);
    const auto found = std::find_if(idle_.begin(), idle_.end(), [&](const auto& c) { return c->key == key; });
    if (found == idle_.end()) {
        return nullptr;
    }
    std::unique_ptr<KeptChecker> checker = std::move(*found);
    idle_.erase(found);
    return checker;
}

void CheckerPool::give_back(std::unique_ptr<KeptChecker> checker) {
    std::unique_ptr<KeptChecker> oldest;
    {
        std::lock_guard lock(mutex_);
        if (checker->jobs < job_limit_) {
            idle_.push_back(std::move(checker));
        } else {
            oldest = std::move(checker);
        }
        if (!oldest && idle_.size() > idle_limit_) {
            oldest = std::move(idle_.front());
            idle_.pop_front();
        }
    }
    if (oldest) {
        end(std::move(oldest));
    }
}

void CheckerPool::end(std::unique_ptr<KeptChecker> checker) const {
    if (!checker || !checker->child) {
        return;
    }
    GpuGate::Hold gpu(checker->gate);
    gpu.change(GpuGate::Use::shared);
    checker->child->kill_group();
    checker->child->finish(Clock::now() + std::chrono::seconds(5));
}

fs::path CheckerPool::program_copy(const fs::path& program) {
    std::lock_guard lock(mutex_);
    const auto found = copies_.find(program);
    if (found != copies_.end()) {
        return found->second;
    }
    const fs::path copy = folder_.path() / fmt::format("checker-{}", copies_.size() + 1);
    fs::copy_file(program, copy, fs::copy_options::overwrite_existing);
    return copies_[program] = copy;
}

}  // namespace cugrade
