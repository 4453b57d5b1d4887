// CUDA's execution model on the CPU (exercises/common/cpu/block_runner.hpp): kernels written against its built-ins,
// run under each schedule, with the faults the GPU would hang or misbehave on.
#include <cstdint>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cpu/block_runner.hpp"

namespace cpu = cugrade::cpu;

namespace {

const std::vector<cpu::Schedule> schedules = {cpu::Schedule::forward, cpu::Schedule::reverse, cpu::Schedule::shuffled};

cpu::LaunchOptions in(cpu::Schedule schedule, std::size_t dynamic_shared_bytes = 0) {
    cpu::LaunchOptions options;
    options.schedule = schedule;
    options.seed = 7;
    options.dynamic_shared_bytes = dynamic_shared_bytes;
    return options;
}

// The seed's block tree: a grid-stride sum per thread, a shared-memory tree with a barrier per level, a partial
// per block. With `barriers` false, the tree reads its neighbours' slots without waiting for them.
std::vector<float> block_sums(const std::vector<float>& input, unsigned blocks, unsigned threads, bool barriers,
                              cpu::Schedule schedule) {
    std::vector<float> partials(blocks, -1.0f);
    cpu::launch({blocks}, {threads}, in(schedule), [&] {
        static thread_local float partial[1024];  // __shared__, as cuda_on_cpu.hpp declares it
        const unsigned t = cpu::thread_idx().x;
        float sum = 0.0f;
        for (std::size_t i = cpu::block_idx().x * threads + t; i < input.size(); i += std::size_t{blocks} * threads) {
            sum += input[i];
        }
        partial[t] = sum;
        if (barriers) {
            cpu::sync_threads();
        }
        for (unsigned active = threads / 2; active > 0; active /= 2) {
            if (t < active) {
                partial[t] += partial[t + active];
            }
            if (barriers) {
                cpu::sync_threads();
            }
        }
        if (t == 0) {
            partials[cpu::block_idx().x] = partial[0];
        }
    });
    return partials;
}

std::string fault_of(const std::function<void()>& kernel, cpu::Dim3 grid, cpu::Dim3 block) {
    try {
        cpu::launch(grid, block, in(cpu::Schedule::forward), kernel);
    } catch (const cpu::KernelFault& fault) {
        return fault.what();
    }
    return "";
}

}  // namespace

TEST_CASE("every thread of every block runs once, with its own built-ins") {
    std::set<std::vector<unsigned>> seen;
    cpu::launch({3, 2, 1}, {4, 2, 2}, in(cpu::Schedule::shuffled), [&] {
        const auto& t = cpu::thread_idx();
        const auto& b = cpu::block_idx();
        CHECK(cpu::block_dim().count() == 16);
        CHECK(cpu::grid_dim().count() == 6);
        seen.insert({b.x, b.y, b.z, t.x, t.y, t.z});
    });
    CHECK(seen.size() == 6 * 16);
}

TEST_CASE("a tree with its barriers sums the same under every schedule") {
    std::vector<float> input(5000);
    std::iota(input.begin(), input.end(), 1.0f);
    for (const auto schedule : schedules) {
        const auto partials = block_sums(input, 4, 256, true, schedule);
        CHECK(std::accumulate(partials.begin(), partials.end(), 0.0) == 5000.0 * 5001.0 / 2);
    }
}

TEST_CASE("a tree without its barriers gives a result that depends on the schedule") {
    std::vector<float> input(4096, 1.0f);
    const auto forward = block_sums(input, 2, 256, false, cpu::Schedule::forward);
    const auto reverse = block_sums(input, 2, 256, false, cpu::Schedule::reverse);
    CHECK(forward != reverse);
}

TEST_CASE("a barrier that not every thread of the block reaches is a fault that says so") {
    const std::string fault = fault_of(
        [] {
            if (cpu::thread_idx().x >= 100) {
                return;
            }
            cpu::sync_threads();
        },
        {2}, {128});
    CHECK(fault == "__syncthreads() in block (0, 0, 0) was reached by 100 threads of 128: the other 28 had returned, "
                   "so the GPU would wait for them forever or go on without them (a barrier inside a branch that "
                   "not every thread of the block takes)");
}

TEST_CASE("warp shuffles, votes and a warp-synchronous reduction") {
    std::vector<int> totals(64), ballots(64), anys(64), alls(64), ups(64), xors(64);
    cpu::launch({1}, {64}, in(cpu::Schedule::reverse), [&] {
        const unsigned t = cpu::thread_idx().x;
        int v = static_cast<int>(t);
        for (unsigned offset = 16; offset > 0; offset /= 2) {
            v += cpu::shfl_down_sync(0xffffffffu, v, offset);
        }
        totals[t] = cpu::shfl_sync(0xffffffffu, v, 0);
        ballots[t] = static_cast<int>(cpu::ballot_sync(0xffffffffu, t % 2 == 0));
        anys[t] = cpu::any_sync(0xffffffffu, t == 40);
        alls[t] = cpu::all_sync(0xffffffffu, t < 60);
        ups[t] = cpu::shfl_up_sync(0xffffffffu, static_cast<int>(t), 1);
        xors[t] = cpu::shfl_xor_sync(0xffffffffu, static_cast<int>(t), 1);
    });
    for (unsigned t = 0; t < 64; ++t) {
        CHECK(totals[t] == (t < 32 ? 496 : 32 * 32 + 496));
        CHECK(static_cast<unsigned>(ballots[t]) == 0x55555555u);
        CHECK(anys[t] == (t >= 32));
        CHECK(alls[t] == (t < 32));
        CHECK(ups[t] == static_cast<int>(t % 32 == 0 ? t : t - 1));
        CHECK(xors[t] == static_cast<int>(t ^ 1));
    }
}

TEST_CASE("__match_any_sync gives each lane the lanes of its mask with its value, in one meeting") {
    std::vector<unsigned> peers(48), halves(48);
    cpu::launch({1}, {48}, in(cpu::Schedule::shuffled), [&] {
        const unsigned t = cpu::thread_idx().x;
        const unsigned lanes = t < 32 ? 0xffffffffu : 0xffffu;  // the second warp has 16 threads
        peers[t] = cpu::match_any_sync(lanes, static_cast<long long>(t % 3));
        halves[t] = cpu::match_any_sync(lanes, (t % 32) < 8 ? 1.5f : -0.0f);
    });
    for (unsigned t = 0; t < 48; ++t) {
        unsigned same = 0, half = 0;
        for (unsigned lane = 0; lane < (t < 32 ? 32u : 16u); ++lane) {
            same |= (lane + t / 32 * 32) % 3 == t % 3 ? 1u << lane : 0u;
            half |= (lane < 8) == ((t % 32) < 8) ? 1u << lane : 0u;
        }
        CHECK(peers[t] == same);
        CHECK(halves[t] == half);
    }
}

TEST_CASE("a warp operation whose lanes are not all there is a fault that names it") {
    CHECK(fault_of(
              [] {
                  if (cpu::thread_idx().x % 32 < 31) {
                      cpu::shfl_down_sync(0xffffffffu, 1.0f, 1);
                  }
              },
              {1}, {32}) ==
          "__shfl_down_sync(0xffffffff, ...) of thread (0, 0, 0) in block (0, 0, 0) waits for lane 31, which had "
          "returned");
    CHECK(fault_of([] { cpu::sync_warp(0xffffffffu); }, {1}, {40}) ==
          "__syncwarp(0xffffffff, ...) of thread (32, 0, 0) in block (0, 0, 0) names lanes past the warp's 8 threads");
}

TEST_CASE("dynamic shared memory is the launch's, one per block, and starts as garbage") {
    std::vector<unsigned> seen(2 * 64), before(2 * 64);
    cpu::launch({2}, {64}, in(cpu::Schedule::shuffled, 64 * sizeof(unsigned)), [&] {
        const unsigned t = cpu::thread_idx().x, b = cpu::block_idx().x;
        auto* d = static_cast<unsigned*>(cpu::dynamic_shared_memory());
        before[b * 64 + t] = d[t];
        cpu::sync_threads();
        d[t] = 1000 * b + t;
        cpu::sync_threads();
        seen[b * 64 + t] = d[63 - t];
    });
    for (unsigned i = 0; i < seen.size(); ++i) {
        CHECK(before[i] == 0x7fbadbadu);
        CHECK(seen[i] == 1000 * (i / 64) + 63 - i % 64);
    }
}

TEST_CASE("launch configurations the GPU refuses are faults with CUDA's error names") {
    CHECK(fault_of([] {}, {1}, {1025}) ==
          "a block of 1025 threads: cudaErrorInvalidConfiguration (1 to 1024 threads a block)");
    CHECK(fault_of([] {}, {0}, {32}) == "a grid of no blocks: cudaErrorInvalidConfiguration");
}
