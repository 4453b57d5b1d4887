// Work spread over the cores this process may use: what a batch's and bench's builds run on.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace cugrade {

// The cores this process may run on: what a Slurm task or taskset gave it, not the whole machine.
unsigned usable_cores();

// Runs `task(i)` for i in [0, count) on `jobs` threads.
template <class Task>
void in_parallel(std::size_t count, unsigned jobs, Task task) {
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < std::min<std::size_t>(jobs, count); ++t) {
        threads.emplace_back([&] {
            for (std::size_t i; (i = next++) < count;) {
                task(i);
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
}

}  // namespace cugrade
