// Cases of several submissions on one GPU (gpu_gate.hpp): speed tests have it alone, what runs is waited for, what
// seems to hang is set aside until the GPU is quiet.
#include "catch.hpp"
#include "fresh_folder.hpp"
#include "scripted_run.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

using namespace cugrade;
using namespace scripted_run;

namespace {

// What happened, in the order it happened, from any thread: a test asserts this order rather than how long
// something took, which a busy machine stretches.
class Events {
public:
    void note(const std::string& event) {
        std::lock_guard lock(mutex_);
        events_.push_back(event);
    }
    std::vector<std::string> order() {
        std::lock_guard lock(mutex_);
        return events_;
    }

private:
    std::mutex mutex_;
    std::vector<std::string> events_;
};

// True once a speed test has asked the gate for the GPU alone: the gate is emptying for it.
bool speed_test_asked(const GpuGate& gate) { return gate.emptying_seconds() > 0.0; }

}  // namespace

TEST_CASE("on a shared GPU a case waits while a speed test has the GPU alone, and the wait is not the case's time") {
    using namespace std::chrono_literals;
    GpuGate gate;
    GpuGate::Hold speed_test(&gate);
    speed_test.change(GpuGate::Use::exclusive);
    auto run = run_beside({"pass-1", "fail-2"}, gate, "-waits");
    CHECK(still_running(run, 1500ms));  // longer than the case's 1 s
    speed_test.change(GpuGate::Use::none);
    const RunResult result = run.get();
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::wrong_answer);
    CHECK(gate.shared_holders() == 0);
}

TEST_CASE("a speed test waits for the cases running now, and no new case starts before it") {
    using namespace std::chrono_literals;
    GpuGate gate(60s, 1, 60s);  // nothing is let past what runs while the test lasts
    GpuGate::Hold running_case(&gate);
    running_case.change(GpuGate::Use::shared);
    auto speed = run_beside({"timed-1"}, gate, "-speed");
    REQUIRE(wait_until([&] { return speed_test_asked(gate); }));
    const auto asked = std::chrono::steady_clock::now();
    // Another submission's case, asking after the speed test did, waits for it.
    Events events;
    auto later_case = std::async(std::launch::async, [&] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::shared);
        events.note("later case let in after " + std::to_string(gate.exclusive_grants()) + " speed test");
    });
    std::this_thread::sleep_for(300ms);  // for the later case to ask: what it did then is in `events`
    CHECK(still_running(speed, 0ms));
    CHECK(gate.exclusive_grants() == 0);
    const double kept_after_ask = seconds_since(asked);
    events.note("running case gave the GPU back");
    running_case.change(GpuGate::Use::none);
    CHECK(speed.get().cases[0].status == Status::passed);
    later_case.get();
    CHECK(events.order() ==
          std::vector<std::string>{"running case gave the GPU back", "later case let in after 1 speed test"});
    CHECK(gate.exclusive_seconds() > 0.0);
    CHECK(gate.exclusive_grants() == 1);
    // The GPU was being emptied for the speed test at least while the running case kept it after the ask.
    CHECK(gate.emptying_seconds() >= kept_after_ask);
    CHECK_FALSE(gate.exclusive_held());
}

TEST_CASE("cases of several submissions share the GPU, and a crash gives back what its process held") {
    GpuGate gate;
    auto first = run_beside({"pass-1", "crash-2", "pass-3"}, gate, "-first");
    auto second = run_beside({"pass-1", "hang-2", "pass-3"}, gate, "-second");
    const RunResult a = first.get(), b = second.get();
    CHECK(a.cases[1].status == Status::crashed);
    CHECK(b.cases[1].status == Status::timed_out);
    CHECK(a.cases[2].status == Status::passed);
    CHECK(b.cases[2].status == Status::passed);
    CHECK(gate.shared_holders() == 0);
    CHECK_FALSE(gate.exclusive_held());
}

TEST_CASE("a process that ends while it holds the GPU gives it back") {
    GpuGate gate;
    const RunResult result = run_plans(plans({"timed-1", "crash-2", "timed-3"}), &gate, "-ends");
    CHECK(result.cases[0].status == Status::passed);
    CHECK(result.cases[1].status == Status::crashed);
    CHECK(result.cases[2].status == Status::passed);
    GpuGate::Hold after(&gate);
    after.change(GpuGate::Use::exclusive);  // would wait forever if anything were still held
    CHECK(gate.exclusive_held());
}

TEST_CASE("work that holds a shared GPU for long does not keep others out while a speed test waits for it") {
    using namespace std::chrono_literals;
    GpuGate gate(200ms);
    GpuGate::Hold hanging(&gate);
    hanging.change(GpuGate::Use::shared);
    auto speed_test = std::async(std::launch::async, [&gate] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::exclusive);
        return true;
    });
    REQUIRE(wait_until([&] { return speed_test_asked(gate); }));
    std::this_thread::sleep_for(300ms);  // the hanging work has held the GPU past the patience now
    {
        GpuGate::Hold other(&gate);
        other.change(GpuGate::Use::shared);  // let in: all that runs has run past the patience
        CHECK(gate.shared_holders() == 2);
    }
    CHECK(gate.exclusive_grants() == 0);  // the speed test still waits for the hanging work
    hanging.change(GpuGate::Use::none);
    CHECK(speed_test.get());
    CHECK(gate.exclusive_grants() == 1);
}

TEST_CASE("a case that ran long before a speed test asked lets new cases in, and those let in let in no more") {
    using namespace std::chrono_literals;
    GpuGate gate(60s, 1, 300ms);  // a patience past the test: only the 0.3 s rule lets work in
    const auto long_case_from = std::chrono::steady_clock::now();
    GpuGate::Hold long_case(&gate);
    long_case.change(GpuGate::Use::shared);
    auto speed_test = std::async(std::launch::async, [&gate] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::exclusive);
        return true;
    });
    REQUIRE(wait_until([&] { return speed_test_asked(gate); }));
    // Asked while a speed test waits: let in once the long case has held the GPU past 0.3 s, while it still holds it.
    GpuGate::Hold let_in(&gate);
    let_in.change(GpuGate::Use::shared);
    CHECK(seconds_since(long_case_from) >= 0.3);
    CHECK(gate.shared_holders() == 2);
    CHECK(gate.exclusive_grants() == 0);
    long_case.change(GpuGate::Use::none);
    // The case let in has held the GPU past 0.3 s too, but it came after the speed test asked: no one else gets in.
    std::this_thread::sleep_for(400ms);
    Events events;
    auto later_case = std::async(std::launch::async, [&] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::shared);
        events.note("later case let in after " + std::to_string(gate.exclusive_grants()) + " speed test");
    });
    std::this_thread::sleep_for(300ms);   // for the later case to ask: what it did then is in `events`
    CHECK(gate.exclusive_grants() == 0);  // the speed test waits for the case let in
    events.note("case let in gave the GPU back");
    let_in.change(GpuGate::Use::none);
    CHECK(speed_test.get());
    later_case.get();
    CHECK(events.order() ==
          std::vector<std::string>{"case let in gave the GPU back", "later case let in after 1 speed test"});
}

TEST_CASE("a case that seems to hang while a speed test waits is set aside, and runs again with its whole limit") {
    using namespace std::chrono_literals;
    GpuGate gate(200ms);
    std::vector<CasePlan> cases = plans({"hang-1", "pass-2"});
    cases[0].case_seconds = 6.0;
    auto hanging = std::async(std::launch::async, [&] { return run_plans(cases, &gate, "-set-aside"); });
    REQUIRE(wait_until([&] { return gate.shared_holders() == 1; }));  // the hang holds the GPU shared
    GpuGate::Hold speed_test(&gate);
    speed_test.change(GpuGate::Use::exclusive);  // granted once the hang was stopped, before its limit
    CHECK(still_running(hanging, 0ms));          // its case waits for a quiet GPU
    speed_test.change(GpuGate::Use::none);
    const RunResult result = hanging.get();
    CHECK(result.cases[0].status == Status::timed_out);  // as alone, after its whole limit
    CHECK(result.cases[1].status == Status::passed);
    CHECK(result.processes == 3);  // stopped; the case after it; the case set aside, again
    CHECK(gate.quiet_rounds() == 1);
    CHECK(gate.shared_holders() == 0);
}

TEST_CASE("cases set aside run again side by side, each in its own process: their limits are not added up") {
    using namespace std::chrono_literals;
    GpuGate gate(200ms);
    gate.take_place();  // another student, graded until the speed tests are done and a while after
    std::vector<CasePlan> cases = plans({"hang-1", "hang-2", "pass-3"});
    cases[0].case_seconds = 6.0;
    cases[1].case_seconds = 6.0;
    RunOptions options;
    options.work_dir = fresh_folder("run", "side-by-side");
    options.startup_seconds = 5.0;
    options.gpu_gate = &gate;
    const auto file = options.work_dir / "trace.jsonl";
    RunTrace trace(file);
    options.trace = &trace;
    auto hanging = std::async(std::launch::async, [&] { return run_cases(CUGRADE_SCRIPTED_HARNESS, cases, options); });
    for (int hang = 0; hang < 2; ++hang) {
        REQUIRE(wait_until([&] { return gate.shared_holders() == 1; }));  // the hang holds the GPU shared
        GpuGate::Hold speed_test(&gate);
        speed_test.change(GpuGate::Use::exclusive);  // granted once the hang was stopped and set aside
    }
    std::this_thread::sleep_for(1500ms);  // for the run to wait for a quiet GPU; not asserted
    gate.give_place();                    // the GPU is quiet now
    const RunResult result = hanging.get();
    // The two limits of 6 s at once, not one after the other: the processes that ran the hangs again overlapped.
    std::vector<std::pair<double, double>> reruns;  // from, to: seconds of the trace
    for (const auto& process : trace_events(file, "")) {
        if (process["first_case"] != "pass-3" && process["ended"] != "stopped: its case set aside") {
            const double to = process["at"].get<double>();
            reruns.emplace_back(to - process["seconds"].get<double>(), to);
        }
    }
    REQUIRE(reruns.size() == 2);
    CHECK(reruns[0].first < reruns[1].second);
    CHECK(reruns[1].first < reruns[0].second);
    // The wait for the quiet GPU is a wait of its own, not one for the GPU, nor a stage's time.
    const std::vector<nlohmann::json> quiet = trace_events(file, "quiet");
    REQUIRE(quiet.size() == 1);
    CHECK(quiet[0]["cases"] == 2);
    CHECK(result.seconds.quiet_wait > 0.0);
    CHECK(result.seconds.quiet_wait == Approx(quiet[0]["waited"].get<double>()));
    double processes_waited = 0.0;
    for (const auto& process : trace_events(file, "")) {
        processes_waited += process["waited_for_gpu"].get<double>();
    }
    CHECK(result.seconds.gpu_wait == Approx(processes_waited));
    CHECK(result.cases[0].status == Status::timed_out);
    CHECK(result.cases[1].status == Status::timed_out);
    CHECK(result.cases[2].status == Status::passed);
    CHECK(result.processes == 5);  // two stopped; the case after them; the two set aside, again
    CHECK(gate.quiet_rounds() == 1);
    CHECK(gate.shared_holders() == 0);
}

TEST_CASE("work set aside waits until every student graded on the GPU waits too, then takes a place again") {
    using namespace std::chrono_literals;
    GpuGate gate(2s, 2);
    gate.take_place();
    gate.take_place();
    auto third = std::async(std::launch::async, [&gate] { gate.take_place(); });
    CHECK(third.wait_for(200ms) == std::future_status::timeout);  // two places, both taken
    auto set_aside = std::async(std::launch::async, [&gate] { return gate.wait_until_quiet(true); });
    third.get();                                                      // the place given up while it waits
    CHECK(set_aside.wait_for(200ms) == std::future_status::timeout);  // two students still graded
    gate.give_place();
    CHECK(set_aside.wait_for(200ms) == std::future_status::timeout);
    gate.give_place();
    CHECK(set_aside.get() > 0.3);
    CHECK(gate.quiet_rounds() == 1);
    auto fourth = std::async(std::launch::async, [&gate] { gate.take_place(); });
    CHECK(fourth.wait_for(5s) == std::future_status::ready);  // one of two places is the set-aside work's
    // With no student left to start, work set aside goes on at once, beside the last students.
    gate.nothing_left_to_start();
    auto last = std::async(std::launch::async, [&gate] { return gate.wait_until_quiet(true); });
    CHECK(last.wait_for(5s) == std::future_status::ready);
    CHECK(gate.quiet_rounds() == 2);
    gate.give_place();
    gate.give_place();
}

TEST_CASE(
    "the students of a quiet round go on together, past the places, and no one else starts until places are free") {
    using namespace std::chrono_literals;
    GpuGate gate(2s, 2);
    gate.take_place();  // a student of the class, still graded
    gate.take_place();  // a student whose work was set aside
    auto first = std::async(std::launch::async, [&gate] { return gate.wait_until_quiet(true); });
    gate.take_place();  // its place, taken by a third
    auto second = std::async(std::launch::async, [&gate] { return gate.wait_until_quiet(true); });
    gate.take_place();  // and a fourth
    CHECK(first.wait_for(200ms) == std::future_status::timeout);
    gate.nothing_left_to_start();
    CHECK(first.wait_for(5s) == std::future_status::ready);  // both, though two students hold both places
    CHECK(second.wait_for(5s) == std::future_status::ready);
    CHECK(gate.quiet_rounds() == 1);
    auto next = std::async(std::launch::async, [&gate] { gate.take_place(); });
    gate.give_place();
    gate.give_place();
    CHECK(next.wait_for(200ms) == std::future_status::timeout);  // four placed, two places
    gate.give_place();
    CHECK(next.wait_for(5s) == std::future_status::ready);
    gate.give_place();
    gate.give_place();
}

TEST_CASE("a speed test's grant says how long it waited and what work left last before it") {
    using namespace std::chrono_literals;
    GpuGate gate;
    GpuGate::Hold running_case(&gate);
    running_case.set_label("alice/sum.cu races/n=1025 racecheck");
    running_case.change(GpuGate::Use::shared);
    auto speed_test = std::async(std::launch::async, [&gate] {
        GpuGate::Hold hold(&gate);
        hold.change(GpuGate::Use::exclusive);
        return hold.last_grant();
    });
    REQUIRE(wait_until([&] { return speed_test_asked(gate); }));
    const auto asked = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(300ms);
    const double kept_after_ask = seconds_since(asked);
    running_case.change(GpuGate::Use::none);
    const GpuGate::Grant grant = speed_test.get();
    CHECK(grant.waited_seconds >= kept_after_ask);
    CHECK(grant.last_to_leave == "alice/sum.cu races/n=1025 racecheck");
    CHECK(grant.last_to_leave_seconds >= kept_after_ask);

    // Nothing to empty: granted at once, and nothing named.
    GpuGate::Hold alone(&gate);
    alone.change(GpuGate::Use::exclusive);
    CHECK(alone.last_grant().last_to_leave.empty());
}
