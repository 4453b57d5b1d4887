// thrust::make_transform_iterator for the CPU self-check: each element read by subscript, transformed.
#pragma once

#include <utility>

namespace thrust {

template <class Function, class Iterator>
class transform_iterator {
public:
    transform_iterator(Iterator base, Function function) : base_(base), function_(std::move(function)) {}
    template <class Index>
    auto operator[](Index i) const {
        return function_(base_[i]);
    }

private:
    Iterator base_;
    Function function_;
};

template <class Iterator, class Function>
transform_iterator<Function, Iterator> make_transform_iterator(Iterator base, Function function) {
    return {base, std::move(function)};
}

}  // namespace thrust
