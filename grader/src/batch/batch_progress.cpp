#include "batch/batch_progress.hpp"

#include <fmt/format.h>

#include "base/text_safety.hpp"

namespace cugrade {

void BatchProgress::line(const std::string& text) {
    std::lock_guard lock(mutex_);
    if (out_ != nullptr) {
        *out_ << (live_ && status_shown_ ? "\r\033[K" : "") << "cugrade: " << terminal_text(text) << std::endl;
        status_shown_ = false;
    }
}

void BatchProgress::stage(std::string name, std::size_t total) {
    std::lock_guard lock(mutex_);
    stage_ = std::move(name);
    total_ = total;
    done_ = failed_ = 0;
    started_ = std::chrono::steady_clock::now();
}

void BatchProgress::done(bool failed, const std::string& what) {
    std::lock_guard lock(mutex_);
    ++done_;
    failed_ += failed;
    if (out_ == nullptr) {
        return;
    }
    if (!live_) {
        *out_ << "cugrade: " << fmt::format("[{}/{}] {}", done_, total_, terminal_text(what)) << std::endl;
        return;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    const double left = done_ > 0 ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0;
    *out_ << fmt::format("\r\033[K{} {}/{}, {} failed, {:.0f} s elapsed, about {:.0f} s left", stage_, done_, total_,
                         failed_, elapsed, left)
          << std::flush;
    status_shown_ = true;
}

void BatchProgress::finish() {
    std::lock_guard lock(mutex_);
    if (out_ != nullptr && live_ && status_shown_) {
        *out_ << "\n";
        status_shown_ = false;
    }
}

}  // namespace cugrade
