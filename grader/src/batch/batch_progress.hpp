// What a batch says while it works: on a terminal one line rewritten in place (done/total, running, failed, elapsed,
// estimated time left); elsewhere a plain line per student, for a log. Safe to call from every worker. What it is
// given (ids, file and archive entry names, error messages) is printed as terminal_text: no control sequence of a
// student's reaches the terminal.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <string>

namespace cugrade {

class BatchProgress {
public:
    // `out` null: silent. `live`: the one line rewritten in place.
    BatchProgress(std::ostream* out, bool live) : out_(out), live_(live) {}

    // A line of its own ("cugrade: " and `text`), above the line rewritten in place.
    void line(const std::string& text);
    // A stage begins: `total` items, counted by done().
    void stage(std::string name, std::size_t total);
    // One item of the stage finished; `what` is its plain line.
    void done(bool failed, const std::string& what);
    // Ends the line rewritten in place.
    void finish();

private:
    std::ostream* out_;
    bool live_;
    bool status_shown_ = false;
    std::mutex mutex_;
    std::string stage_;
    std::size_t total_ = 0, done_ = 0, failed_ = 0;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace cugrade
