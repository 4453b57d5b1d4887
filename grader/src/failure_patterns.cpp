#include "cugrade/diagnosis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

namespace cugrade {
namespace {

bool failed(Status status) {
    return status == Status::wrong_answer || status == Status::cuda_error || status == Status::timed_out;
}

// The visible correctness cases that have a verdict on their correctness, and which of them failed.
struct Verdicts {
    std::vector<const ScoredCase*> cases;
    std::vector<bool> failing;
    std::size_t failures = 0;
};

Verdicts correctness_verdicts(const std::vector<ScoredCase>& cases) {
    Verdicts verdicts;
    for (const auto& c : cases) {
        if (c.plan.visibility != Visibility::visible || c.plan.timed || c.plan.race_check) {
            continue;
        }
        const bool fails = failed(c.status);
        if (!fails && c.status != Status::passed) {
            continue;  // skipped, rejected, a harness error: says nothing of the code's arithmetic
        }
        verdicts.cases.push_back(&c);
        verdicts.failing.push_back(fails);
        verdicts.failures += fails;
    }
    return verdicts;
}

// Whether `predicts` holds exactly for the failing cases.
bool separates(const Verdicts& verdicts, const std::function<bool(const ScoredCase&)>& predicts) {
    for (std::size_t i = 0; i < verdicts.cases.size(); ++i) {
        if (predicts(*verdicts.cases[i]) != verdicts.failing[i]) {
            return false;
        }
    }
    return true;
}

std::vector<std::string> failing_ids(const Verdicts& verdicts) {
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < verdicts.cases.size(); ++i) {
        if (verdicts.failing[i]) {
            ids.push_back(verdicts.cases[i]->plan.id);
        }
    }
    return ids;
}

// "call 2 of 3: ..." -> 2; 0 when the detail names no call.
int failing_call(const std::string& detail) {
    int call = 0, calls = 0;
    return std::sscanf(detail.c_str(), "call %d of %d", &call, &calls) == 2 ? call : 0;
}

bool is_matrix(const ScoredCase& c) { return c.plan.shape.size() == 2; }

std::string input_name(const ScoredCase& c) {
    const auto slash = c.plan.id.rfind('/');
    return slash == std::string::npos ? "" : c.plan.id.substr(slash + 1);
}

}  // namespace

std::vector<Diagnosis> failure_patterns(const std::vector<ScoredCase>& cases) {
    const Verdicts verdicts = correctness_verdicts(cases);
    if (verdicts.failures < 2 || verdicts.failures == verdicts.cases.size()) {
        return {};
    }
    const bool matrices = std::all_of(verdicts.cases.begin(), verdicts.cases.end(),
                                      [](const ScoredCase* c) { return is_matrix(*c); });
    const std::string count = fmt::format("{} of {} visible cases fail", verdicts.failures, verdicts.cases.size());
    std::vector<Diagnosis> found;
    const auto add = [&](std::string summary, std::string hint) {
        found.push_back({"pattern", std::move(summary), count, failing_ids(verdicts), std::move(hint)});
    };

    // A later call wrong where the first was right: something outlived the call.
    if (separates(verdicts, [](const ScoredCase& c) { return failed(c.status) && failing_call(c.detail) > 1; })) {
        add("fails only after the first call: right on call 1, wrong on a later one",
            "state left on the device by one call changes the next: a __device__ counter or flag that is not reset, "
            "or scratch read before it is written");
        return found;  // what sizes the failures have follows from this
    }

    // Sizes: the largest power of two whose multiples pass and all others fail, shown by a pass of a size that is
    // not empty.
    for (std::uint64_t k = 4096; k >= 2; k /= 2) {
        const auto not_multiple = [&](const ScoredCase& c) {
            return std::any_of(c.plan.shape.begin(), c.plan.shape.end(), [&](std::uint64_t e) { return e % k != 0; });
        };
        const bool shown = std::any_of(verdicts.cases.begin(), verdicts.cases.end(), [&](const ScoredCase* c) {
            return c->status == Status::passed && c->plan.size() > 0 && !not_multiple(*c);
        });
        if (shown && separates(verdicts, not_multiple)) {
            add(matrices ? fmt::format("fails every shape whose rows or columns are not a multiple of {}", k)
                         : fmt::format("fails every n that is not a multiple of {}", k),
                matrices ? "the last, partial block or tile along a side: check its bounds, and round the grid up"
                         : "the last, partial block: round the number of blocks up, and let every thread check its "
                           "index against n");
            break;
        }
    }

    // A size above which everything fails.
    std::optional<std::uint64_t> largest_pass, smallest_failure;
    for (std::size_t i = 0; i < verdicts.cases.size(); ++i) {
        const std::uint64_t size = verdicts.cases[i]->plan.size();
        auto& bound = verdicts.failing[i] ? smallest_failure : largest_pass;
        bound = verdicts.failing[i] ? std::min(bound.value_or(size), size) : std::max(bound.value_or(size), size);
    }
    if (largest_pass && *largest_pass == 0 && smallest_failure) {
        add("right only where there is nothing to compute, n = 0",
            "no result is written, or none that is right: start with the smallest sizes and compare with a sum by "
            "hand");
    } else if (largest_pass && smallest_failure && *largest_pass < *smallest_failure) {
        add(fmt::format("fails only above {} elements: right up to {}, wrong from {} on", *largest_pass,
                        *largest_pass, *smallest_failure),
            "what grows with the size: the number of blocks (a grid limit, scratch for one partial per block), a "
            "32-bit index, or a single block left to do all the work");
    }

    if (matrices && separates(verdicts, [](const ScoredCase& c) { return c.plan.shape[0] != c.plan.shape[1]; })) {
        add("fails only non-square shapes",
            "rows and columns swapped somewhere: in an index (row * cols + col), a bound, or the grid's dimensions");
    }

    std::vector<std::string> inputs;
    for (const ScoredCase* c : verdicts.cases) {
        if (std::find(inputs.begin(), inputs.end(), input_name(*c)) == inputs.end()) {
            inputs.push_back(input_name(*c));
        }
    }
    for (const auto& input : inputs) {
        if (inputs.size() > 1 && separates(verdicts, [&](const ScoredCase& c) { return input_name(c) == input; })) {
            add(fmt::format("fails only with the '{}' inputs", input),
                "what only those values bring out: signs, zeros, infinities, or a starting value that is not the "
                "operation's identity");
        }
    }
    return found;
}

}  // namespace cugrade
