// The harness's result channel to the grader (protocol.hpp): result records, and in a batch the requests for the
// shared GPU. Work on the GPU runs in a SharedGpu span, held only while the GPU works so that a speed test waiting
// for the GPU never waits on host work; a speed test samples in a GpuAlone span. Without a grader (a harness run by
// hand) records go to stderr and the spans do nothing. Its records are JSON, written in channel.cpp.
#pragma once

#include <cstdio>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "protocol.hpp"

namespace cugrade::harness {

class Channel {
public:
    Channel();

    // One record, with the run's token.
    void send(nlohmann::json record);

    // A batch's GPU sharing (protocol.hpp). Shared spans nest; the GPU alone covers any shared span inside it.
    void share_gpu();
    void unshare_gpu();
    // The GPU alone nests too: a profile made in a speed test's turn keeps the turn.
    void gpu_alone();
    void gpu_done();

    void set_gpu_gate(bool on) { gpu_gate_ = on && fd_ > 2; }

    // The machine's turn at the GPU's performance counters (protocol.hpp), asked holding nothing of the GPU so that
    // the profile it waits for can have the GPU alone: the grader's answer. Without a grader there is no one to take
    // turns with.
    char take_counters();
    // The turn if no other profile has it now, asked holding the GPU alone and keeping it: waiting for another
    // profile while holding the GPU alone would keep that profile (and every other submission) waiting.
    char try_counters();
    void give_counters();

    // Everything printed so far goes to the visible cases' output (protocol.hpp). Without a grader, nothing to wait
    // for.
    void begin_hidden_cases();

    // One line the grader writes (a job, protocol.hpp), without its newline; at most `limit` bytes. With the grader
    // gone, or a line longer than that, the harness ends. The descriptors the grader sent with it (SCM_RIGHTS) are
    // added to `descriptors`, where given; otherwise the kernel closes them.
    std::string receive_line(std::size_t limit, std::vector<int>* descriptors = nullptr);

private:
    enum class Held { none, shared, exclusive };

    // Asks, and for anything but "none" waits for the grant.
    void ask_for_gpu(const char* use, Held held);
    // The grader's one-byte answer. With the grader gone there is nothing left to report to, so the harness ends.
    char answer(std::vector<int>* descriptors = nullptr);
    void wait_for(char expected);

    int fd_ = -1;
    std::FILE* out_;
    std::string token_;
    bool gpu_gate_ = false;
    Held held_ = Held::none;
    int shared_depth_ = 0;
    int alone_depth_ = 0;
};

inline Channel*& active_channel() {
    static Channel* channel = nullptr;
    return channel;
}

// The channel's GPU requests, when there is a channel (a harness run by hand has none).
template <class Request>
void ask_channel(Request request) {
    if (Channel* channel = active_channel(); channel != nullptr) {
        request(*channel);
    }
}

inline void share_gpu() {
    ask_channel([](Channel& channel) { channel.share_gpu(); });
}
inline void unshare_gpu() {
    ask_channel([](Channel& channel) { channel.unshare_gpu(); });
}
inline void gpu_alone() {
    ask_channel([](Channel& channel) { channel.gpu_alone(); });
}
inline void gpu_done() {
    ask_channel([](Channel& channel) { channel.gpu_done(); });
}

// The machine's turn at the GPU's counters, held while it lives; a harness run by hand always has it. `waiting`
// gives up what the process holds of the GPU and waits for the turn; `if_free`, asked holding the GPU alone, keeps it
// and takes the turn only if no other profile has it. Either way the grader may want no profile at all. `round`: the
// grader holds the turn for a whole round of profiles (run_mode.hpp), so nothing is asked or given back.
class CountersTurn {
public:
    enum class Ask { waiting, if_free, round };
    explicit CountersTurn(Ask ask) : ask_(ask) {
        Channel* channel = active_channel();
        answer_ = channel == nullptr || ask == Ask::round ? protocol::counters_granted
                  : ask == Ask::waiting                   ? channel->take_counters()
                                                          : channel->try_counters();
    }
    ~CountersTurn() {
        if (Channel* channel = active_channel(); channel != nullptr && granted() && ask_ != Ask::round) {
            channel->give_counters();
        }
    }
    CountersTurn(const CountersTurn&) = delete;
    CountersTurn& operator=(const CountersTurn&) = delete;
    bool granted() const { return answer_ == protocol::counters_granted; }
    bool unwanted() const { return answer_ == protocol::counters_unwanted; }

private:
    Ask ask_;
    char answer_ = protocol::counters_refused;
};

template <void (*Begin)(), void (*End)()>
class GpuSpan {
public:
    GpuSpan() { Begin(); }
    ~GpuSpan() { End(); }
    GpuSpan(const GpuSpan&) = delete;
    GpuSpan& operator=(const GpuSpan&) = delete;
};
using SharedGpu = GpuSpan<share_gpu, unshare_gpu>;
using GpuAlone = GpuSpan<gpu_alone, gpu_done>;

}  // namespace cugrade::harness
