#include "score/failure_patterns.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
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

// Whether `predicts` holds exactly for the failing cases. An empty case, with nothing to compute, shows nothing.
bool separates(const Verdicts& verdicts, const std::function<bool(const ScoredCase&)>& predicts) {
    for (std::size_t i = 0; i < verdicts.cases.size(); ++i) {
        if (verdicts.cases[i]->plan.size() > 0 && predicts(*verdicts.cases[i]) != verdicts.failing[i]) {
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

// As the case's id names its inputs.
std::string input_name(const ScoredCase& c) {
    std::vector<std::string> names;
    for (const auto& input : c.plan.inputs) {
        names.push_back(input.distribution.name);
    }
    return input_label(names);
}

// Right on call 1 and wrong on a later call of the same input: the result depends on what an earlier call left
// behind. One such case proves it; the cases after it may fail from their first call on.
std::optional<Diagnosis> state_left_behind(const std::vector<ScoredCase>& cases, const Verdicts& verdicts) {
    // A race makes results vary from call to call, so a later call's failure says nothing of state then.
    const bool racy =
        std::any_of(cases.begin(), cases.end(), [](const ScoredCase& c) { return c.status == Status::race; });
    std::vector<std::string> later_calls;
    for (std::size_t i = 0; i < verdicts.cases.size() && !racy; ++i) {
        if (verdicts.failing[i] && failing_call(verdicts.cases[i]->detail) > 1) {
            later_calls.push_back(verdicts.cases[i]->plan.id);
        }
    }
    if (later_calls.empty()) {
        return std::nullopt;
    }
    return Diagnosis{"pattern",
                     "right on the first call, wrong on a later call of the same input",
                     fmt::format("{} of {} visible cases", later_calls.size(), verdicts.cases.size()),
                     later_calls,
                     "state left on the device by one call changes the next: a __device__ counter or flag that "
                     "is not reset, or scratch read before it is written",
                     "",
                     "right on the first call, wrong on a later call of the same input",
                     "state"};
}

// A pattern among the failures: what they share, what likely causes it, and the topic of its fix.
struct Pattern {
    std::string summary;
    std::string hint;
    std::string topic;
};

// Sizes: a power of two (a block's size) whose multiples all pass, seen in two non-empty sizes at least, where
// nearly every other size fails (a tolerance can hide a small error among real-valued inputs). The one that
// explains most failures, the largest among equals.
std::optional<Pattern> partial_block(const Verdicts& verdicts, bool matrices) {
    std::optional<std::uint64_t> block;
    double best_share = 0.0;
    for (std::uint64_t k = 2; k <= 4096; k *= 2) {
        const auto not_multiple = [&](const ScoredCase& c) {
            return std::any_of(c.plan.shape.begin(), c.plan.shape.end(), [&](std::uint64_t e) { return e % k != 0; });
        };
        std::size_t predicted = 0, failing_predicted = 0;
        bool failure_outside = false;
        std::vector<std::vector<std::uint64_t>> passing_multiples;
        for (std::size_t i = 0; i < verdicts.cases.size(); ++i) {
            const ScoredCase& c = *verdicts.cases[i];
            if (not_multiple(c)) {
                ++predicted;
                failing_predicted += verdicts.failing[i];
            } else if (verdicts.failing[i]) {
                failure_outside = true;
            } else if (c.plan.size() > 0 && std::find(passing_multiples.begin(), passing_multiples.end(),
                                                      c.plan.shape) == passing_multiples.end()) {
                passing_multiples.push_back(c.plan.shape);
            }
        }
        const double share = predicted > 0 ? static_cast<double>(failing_predicted) / predicted : 0.0;
        if (!failure_outside && passing_multiples.size() >= 2 && share >= 0.85 && share >= best_share) {
            block = k;
            best_share = share;
        }
    }
    if (!block) {
        return std::nullopt;
    }
    return Pattern{matrices ? fmt::format("fails every shape whose rows or columns are not a multiple of {}", *block)
                            : fmt::format("fails every n that is not a multiple of {}", *block),
                   matrices ? "the last, partial block or tile along a side: check its bounds, and round the grid up"
                            : "the last, partial block: round the number of blocks up, and let every thread check its "
                              "index against n",
                   "bounds"};
}

// The largest size that passes and the smallest that fails.
struct SizeBounds {
    std::optional<std::uint64_t> largest_pass, smallest_failure;
};

SizeBounds size_bounds(const Verdicts& verdicts) {
    SizeBounds bounds;
    for (std::size_t i = 0; i < verdicts.cases.size(); ++i) {
        const std::uint64_t size = verdicts.cases[i]->plan.size();
        auto& bound = verdicts.failing[i] ? bounds.smallest_failure : bounds.largest_pass;
        bound = verdicts.failing[i] ? std::min(bound.value_or(size), size) : std::max(bound.value_or(size), size);
    }
    return bounds;
}

// One size fails, and only it: an edge that no other size reaches.
std::optional<Pattern> one_failing_shape(const Verdicts& verdicts, const SizeBounds& bounds) {
    const auto& [largest_pass, smallest_failure] = bounds;
    std::set<std::vector<std::uint64_t>> failing_shapes, passing_shapes;
    for (std::size_t i = 0; i < verdicts.cases.size(); ++i) {
        (verdicts.failing[i] ? failing_shapes : passing_shapes).insert(verdicts.cases[i]->plan.shape);
    }
    const bool one_shape = failing_shapes.size() == 1 && passing_shapes.size() >= 2 &&
                           !passing_shapes.contains(*failing_shapes.begin()) && largest_pass && smallest_failure &&
                           *largest_pass > *smallest_failure;  // else "fails only above" says it
    if (!one_shape) {
        return std::nullopt;
    }
    const auto& shape = *failing_shapes.begin();
    const bool all_timed_out = std::all_of(verdicts.cases.begin(), verdicts.cases.end(), [](const ScoredCase* c) {
        return !failed(c->status) || c->status == Status::timed_out;
    });
    return Pattern{shape.size() == 2
                       ? fmt::format("fails only the {}x{} shape; every other shape passes", shape[0], shape[1])
                       : fmt::format("fails only when n = {}; every other size passes", shape.empty() ? 0 : shape[0]),
                   all_timed_out ? "the call never ends at that size: a loop whose exit that size never reaches, or "
                                   "threads waiting for something that never comes"
                                 : "what is special at that size: an edge no other size reaches (one element, a single "
                                   "partial block)",
                   "bounds"};
}

// Right only at n = 0, or a size above which everything fails.
std::optional<Pattern> size_limit(const SizeBounds& bounds) {
    const auto& [largest_pass, smallest_failure] = bounds;
    if (largest_pass && *largest_pass == 0 && smallest_failure) {
        return Pattern{"right only where there is nothing to compute, n = 0",
                       "no result is written, or none that is right: start with the smallest sizes and compare with a "
                       "sum by hand",
                       "bounds"};
    }
    if (largest_pass && smallest_failure && *largest_pass < *smallest_failure) {
        return Pattern{fmt::format("fails only above {} elements: right up to {}, wrong from {} on", *largest_pass,
                                   *largest_pass, *smallest_failure),
                       "what grows with the size: the number of blocks (a grid limit, scratch for one partial per "
                       "block), a 32-bit index, or a single block left to do all the work",
                       "grid"};
    }
    return std::nullopt;
}

// Every failure non-square, every square right, and nearly every non-square shape wrong (one may still pass:
// one column, where a swapped index visits each element once all the same).
std::optional<Pattern> non_square_only(const Verdicts& verdicts, bool matrices) {
    const auto square = [](const ScoredCase& c) { return c.plan.shape[0] == c.plan.shape[1]; };
    bool squares_pass = false, only_non_square = true;
    std::size_t non_square = 0;
    for (std::size_t i = 0; i < verdicts.cases.size() && matrices; ++i) {
        squares_pass = squares_pass || (square(*verdicts.cases[i]) && !verdicts.failing[i]);
        only_non_square = only_non_square && !(square(*verdicts.cases[i]) && verdicts.failing[i]);
        non_square += !square(*verdicts.cases[i]);
    }
    if (!(matrices && squares_pass && only_non_square && verdicts.failures >= 0.8 * static_cast<double>(non_square))) {
        return std::nullopt;
    }
    return Pattern{"fails only non-square shapes",
                   "rows and columns swapped somewhere: in an index (row * cols + col), a bound, or the grid's "
                   "dimensions",
                   "indexing"};
}

std::vector<Pattern> input_patterns(const Verdicts& verdicts) {
    std::vector<std::string> inputs;
    for (const ScoredCase* c : verdicts.cases) {
        if (std::find(inputs.begin(), inputs.end(), input_name(*c)) == inputs.end()) {
            inputs.push_back(input_name(*c));
        }
    }
    std::vector<Pattern> patterns;
    for (const auto& input : inputs) {
        if (inputs.size() > 1 && separates(verdicts, [&](const ScoredCase& c) { return input_name(c) == input; })) {
            patterns.push_back({fmt::format("fails only with the '{}' inputs", input),
                                "what only those values bring out: signs, zeros, infinities, or a starting value "
                                "that is not the operation's identity",
                                "inputs"});
        }
    }
    return patterns;
}

// An exercise parameter that the rubric sets per group: scan's exclusive.
std::vector<Pattern> parameter_patterns(const Verdicts& verdicts) {
    std::map<std::string, std::set<double>> parameters;
    for (const ScoredCase* c : verdicts.cases) {
        for (const auto& [name, value] : c->plan.parameters) {
            parameters[name].insert(value);
        }
    }
    std::vector<Pattern> patterns;
    for (const auto& [name, values] : parameters) {
        for (const double value : values) {
            if (values.size() > 1 && separates(verdicts, [&](const ScoredCase& c) {
                    const auto found_value = c.plan.parameters.find(name);
                    return found_value != c.plan.parameters.end() && found_value->second == value;
                })) {
                patterns.push_back({fmt::format("fails only when {} is {}", name, value),
                                    "the code path for that setting: compare it with the one that passes, element by "
                                    "element",
                                    "parameter"});
            }
        }
    }
    return patterns;
}

// Every pattern that separates the failures from the passes, in the order they are told.
std::vector<Pattern> separating_patterns(const Verdicts& verdicts) {
    const bool matrices =
        std::all_of(verdicts.cases.begin(), verdicts.cases.end(), [](const ScoredCase* c) { return is_matrix(*c); });
    const SizeBounds bounds = size_bounds(verdicts);
    std::vector<Pattern> patterns;
    for (auto pattern : {partial_block(verdicts, matrices), one_failing_shape(verdicts, bounds), size_limit(bounds),
                         non_square_only(verdicts, matrices)}) {
        if (pattern) {
            patterns.push_back(std::move(*pattern));
        }
    }
    for (auto& pattern : input_patterns(verdicts)) {
        patterns.push_back(std::move(pattern));
    }
    for (auto& pattern : parameter_patterns(verdicts)) {
        patterns.push_back(std::move(pattern));
    }
    return patterns;
}

}  // namespace

std::vector<Diagnosis> failure_patterns(const std::vector<ScoredCase>& cases) {
    const Verdicts verdicts = correctness_verdicts(cases);
    if (auto state = state_left_behind(cases, verdicts)) {
        return {std::move(*state)};  // the other failures may follow from the same state
    }
    if (verdicts.failures < 2 || verdicts.failures == verdicts.cases.size()) {
        return {};  // too few failures to share anything, or nothing passes: nothing to tell the failures from
    }
    const std::string count = fmt::format("{} of {} visible cases fail", verdicts.failures, verdicts.cases.size());
    std::vector<Diagnosis> found;
    for (auto& pattern : separating_patterns(verdicts)) {
        found.push_back({"pattern", pattern.summary, count, failing_ids(verdicts), std::move(pattern.hint), "",
                         pattern.summary, std::move(pattern.topic)});
    }
    return found;
}

}  // namespace cugrade
